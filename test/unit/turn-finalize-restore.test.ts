import { describe, expect, it } from "vitest";
import { createActor, fromPromise } from "xstate";
import { turnMachine } from "../../machines/turn.machine.js";
import type { ModelResponse, ChatMessage } from "../../src/providers/messages.js";
import { restoreMessages, type TurnRecord } from "../../src/store/turns.js";
import { persistTurnSnapshot, type LiveTurnSnapshot } from "../../src/store/turn-snapshot.js";

describe("a turn resumed in finalizing_content gives the hooks the messages before the answer", () => {
  it("restored finalizeContent input equals the live one", async () => {
    const machine = turnMachine.provide({
      guards: { hasHooks: () => true },
      actors: {
        callModel: fromPromise(async () => ({ content: "the answer", toolCalls: [], finishReason: "stop", usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 } }) as ModelResponse),
        finalizeContent: fromPromise(() => new Promise<string>(() => {})),
      },
    });
    const input = { turnId: "t1", sessionKey: "api:a", channel: "api", chatId: "a", messages: [{ role: "system", content: "s" }, { role: "user", content: "hi" }] as ChatMessage[], maxIterations: 5 };
    const actor = createActor(machine, { input });
    actor.start();
    await new Promise<void>((r) => actor.subscribe((s) => s.value === "finalizing_content" && r()));
    const snap = actor.getSnapshot();
    const live = (snap.children as Record<string, { getSnapshot(): { input: { messages: ChatMessage[] } } }>)[Object.keys(snap.children)[0]!]!.getSnapshot().input.messages;
    const record = { snapshot: persistTurnSnapshot(snap as unknown as LiveTurnSnapshot), messageCount: snap.context.messages.length } as unknown as TurnRecord;
    const restored = restoreMessages(record, input as never, snap.context.messages.slice(2));
    const child = Object.values((restored.snapshot as unknown as { children: Record<string, { snapshot: { input: { messages: ChatMessage[] } } }> }).children)[0]!;
    expect(child.snapshot.input.messages).toEqual(live);
  });
});
