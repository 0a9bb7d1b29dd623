import { describe, expect, it } from "vitest";
import { createActor, fromPromise } from "xstate";
import { turnMachine, type TurnSnapshot } from "../../machines/turn.machine.js";
import type { ModelResponse } from "../../src/providers/messages.js";
import type { TurnRecord } from "../../src/store/turns.js";
import { packSnapshot, persistTurnSnapshot, type LiveTurnSnapshot } from "../../src/store/turn-snapshot.js";

/** What the turn runtime stored before persistTurnSnapshot: XState's persisted snapshot, packed. */
const viaXState = (snap: TurnSnapshot) =>
  packSnapshot(turnMachine.getPersistedSnapshot({ ...snap, context: { ...snap.context, messages: [] } } as TurnSnapshot) as unknown as TurnRecord["snapshot"]);

const response = (over: Partial<ModelResponse>): ModelResponse =>
  ({ content: "", toolCalls: [], finishReason: "stop", usage: { promptTokens: 3, completionTokens: 2, totalTokens: 5 }, ...over }) as ModelResponse;

describe("persistTurnSnapshot", () => {
  it("stores what XState's getPersistedSnapshot then packSnapshot stored, at every state of a turn with a tool call", async () => {
    const answers = [
      response({ content: "looking", toolCalls: [{ id: "c1", name: "list_dir", rawArguments: "{\"path\":\".\"}", arguments: { path: "." } }] }),
      response({ content: "done", model: "p/m" } as Partial<ModelResponse>),
    ];
    const machine = turnMachine.provide({
      actors: {
        callModel: fromPromise(async () => answers.shift()!),
        runTools: fromPromise(async ({ input }) => input.calls.map((c) => ({ role: "tool" as const, tool_call_id: c.id, name: c.name, content: "a b" }))),
      },
    });
    const actor = createActor(machine, {
      input: { turnId: "t1", sessionKey: "api:a", channel: "api", chatId: "a", messages: [{ role: "system", content: "s" }, { role: "user", content: "hi" }], maxIterations: 5 },
    });
    const seen: string[] = [];
    const compared: Array<[string, string]> = [];
    actor.subscribe((snap) => {
      seen.push(String(snap.value));
      const ours = persistTurnSnapshot(snap as unknown as LiveTurnSnapshot);
      const theirs = viaXState(snap as TurnSnapshot);
      // Compared as stored (JSON), at the moment the runtime would store it.
      compared.push([JSON.stringify(ours), JSON.stringify(theirs)]);
      expect((ours.context as { messages: unknown[] }).messages).toEqual([]);
      if (snap.value === "tools_completed") actor.send({ type: "checkpointed" });
    });
    actor.start();
    await new Promise<void>((resolve) => actor.subscribe({ complete: resolve }));
    expect(seen).toEqual(["awaiting_model", "awaiting_tools", "tools_completed", "awaiting_model", "responded"]);
    for (const [ours, theirs] of compared) expect(JSON.parse(ours)).toEqual(JSON.parse(theirs));
    // The children were stored (the model call's and the tools' inputs, packed).
    expect(compared.some(([ours]) => ours.includes("callsFromContext"))).toBe(true);
    // The live snapshot keeps its messages.
    expect(actor.getSnapshot().context.messages.length).toBeGreaterThan(2);
  });

  it("refuses a history value, which the turn machine never has", () => {
    const snap = { status: "active", value: "x", historyValue: { a: [] }, context: { messages: [] }, children: {} };
    expect(() => persistTurnSnapshot(snap)).toThrow(/no history states/);
  });
});
