import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool } from "../../src/tools/contract.js";
import { createToolRegistry } from "../../src/tools/registry.js";
import { startTurn } from "../../actors/turn.js";
import { getTurn, listOpenTurns } from "../../src/store/turns.js";
import type { Store } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { countingTools, turnDeps, turnInput } from "../helpers/turn-env.js";
import { useTempDirs } from "../helpers/tmp.js";
import { closeAfterEach } from "../helpers/teardown.js";

describe("turn correctness", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let store: Store | undefined;
  closeAfterEach(() => [store, fake]);

  it("a call id the provider repeats (or leaves out) in a later response is a new call: it runs", async () => {
    // No ids: troupe's fallback id restarts at call_0 in every response.
    fake = await startFakeOpenAi([
      { toolCalls: [{ name: "append_note", arguments: { text: "first" } }] },
      { toolCalls: [{ name: "append_note", arguments: { text: "second" } }] },
      { toolCalls: [{ id: "dup", name: "append_note", arguments: { text: "third" } }, { id: "dup", name: "append_note", arguments: { text: "fourth" } }] },
      { content: "done" },
    ]);
    const tools = countingTools();
    const deps = await turnDeps(await tempDir(), fake.url, tools.registry);
    store = deps.store;
    const keys: string[] = [];
    const registry = deps.registry;
    const execute = registry.execute.bind(registry);
    registry.execute = (name, args, ctx, err) => {
      keys.push(ctx.idempotencyKey);
      return execute(name, args, ctx, err);
    };
    const result = await startTurn(deps, { input: turnInput("t-ids", "go") }).done;
    expect(result.state).toBe("responded");
    expect(tools.runs).toEqual(["append_note", "append_note", "append_note", "append_note"]);
    const results = result.output.newMessages.filter((m) => m.role === "tool").map((m) => m.content);
    expect(results).toEqual(["noted: first", "noted: second", "noted: third", "noted: fourth"]);
    expect(new Set(keys).size).toBe(4);
  });

  it("a turn that fails while running tools closes its open calls, so the history stays well formed", async () => {
    fake = await startFakeOpenAi([{ toolCalls: [{ id: "x1", name: "boom", arguments: {} }, { id: "x2", name: "boom", arguments: {} }] }]);
    const registry = createToolRegistry([
      defineTool({ name: "boom", description: "fails the infrastructure", parameters: z.object({}), execute: async () => "never" }),
    ]);
    const deps = await turnDeps(await tempDir(), fake.url, registry);
    store = deps.store;
    // An infrastructure failure (not a tool error): the tool journal's write fails. (The first
    // call's tool.started rides on the awaiting_tools checkpoint; the second call's, synced before it
    // runs, is written by runTools itself. A failed tool.completed write is the next checkpoint's
    // failure instead: see model-call-overlap.test.ts.)
    const batch = deps.store.batch.bind(deps.store);
    deps.store.batch = async (ops, opts) => {
      if (ops.length === 1 && ops[0]!.type === "put" && ops[0]!.key.includes(":tool:") && (ops[0]!.value as { status?: string }).status === "started") throw new Error("disk on fire");
      return batch(ops, opts);
    };
    const result = await startTurn(deps, { input: turnInput("t-fail", "go") }).done;
    expect(result.state).toBe("failed");
    const msgs = result.output.newMessages;
    const callIds = msgs.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []).map((c) => c.id) : []));
    const answered = msgs.flatMap((m) => (m.role === "tool" ? [m.tool_call_id] : []));
    expect(callIds).toEqual(["x1", "x2"]);
    expect(answered).toEqual(["x1", "x2"]);
    expect(msgs.at(-1)).toMatchObject({ role: "assistant" });
  });

  it("a failed checkpoint fails the turn once: later checkpoints are not written and the turn stays open at its last durable one", async () => {
    fake = await startFakeOpenAi([{ toolCalls: [{ id: "a", name: "lookup", arguments: { word: "w", delayMs: 1 } }] }, { content: "done" }]);
    const tools = countingTools();
    const deps = await turnDeps(await tempDir(), fake.url, tools.registry);
    store = deps.store;
    const batch = deps.store.batch.bind(deps.store);
    let turnWrites = 0;
    const running: { handle?: ReturnType<typeof startTurn> } = {};
    const states: string[] = [];
    deps.store.batch = async (ops, opts) => {
      const rec = ops.find((op) => op.type === "put" && op.sublevel === "turns");
      if (rec) {
        turnWrites++;
        if (turnWrites === 2) {
          // Another snapshot is queued behind the failing write (a message injected meanwhile).
          running.handle?.inject("also this");
          await new Promise((r) => setTimeout(r, 20));
          throw new Error("disk full");
        }
        states.push((rec as { value: { state: string } }).value.state);
      }
      return batch(ops, opts);
    };
    const handle = startTurn(deps, { input: turnInput("t-cp", "go") });
    running.handle = handle;
    await expect(handle.done).rejects.toThrow(/disk full/);
    await handle.stop();
    // Only the first checkpoint is durable; nothing after the failure was written, no tool ran.
    expect(states).toEqual(["awaiting_model"]);
    expect(tools.runs).toEqual([]);
    const record = await getTurn(store, "t-cp");
    expect(record?.final).toBe(false);
    expect((await listOpenTurns(store)).map((t) => t.turnId)).toEqual(["t-cp"]);
  });
});

describe("turn records: format version and parsing", () => {
  const tempDir = useTempDirs();
  it("a record from a newer troupe is refused with a clear message; a damaged snapshot is a corrupt record", async () => {
    const { openStore } = await import("../../src/store/store.js");
    const s = await openStore(`${await tempDir()}/store`);
    try {
      const base = { turnId: "t", sessionKey: "k", state: "awaiting_model", final: false, seq: 1, createdAt: 0, updatedAt: 0, resumes: 0 };
      const snapshot = { status: "active", value: "awaiting_model", context: { turnId: "t", messages: [], iteration: 0, seq: 1, takenIds: [] } };
      await s.batch([{ type: "put", sublevel: "turns", key: "t", value: { ...base, format: 99, snapshot } }]);
      await expect(getTurn(s, "t")).rejects.toThrow(/written by a newer troupe \(format 99; this one reads up to 5\): upgrade troupe/);
      await s.batch([{ type: "put", sublevel: "turns", key: "t", value: { ...base, snapshot: { ...snapshot, context: { turnId: "t", messages: "nope" } } } }]);
      await expect(getTurn(s, "t")).rejects.toThrow(/record turns\/t does not match its schema/);
      // A record without a format is format 1 (before journal keys by position) and still reads.
      await s.batch([{ type: "put", sublevel: "turns", key: "t", value: { ...base, snapshot } }]);
      expect((await getTurn(s, "t"))?.format).toBe(1);
    } finally {
      await s.close();
    }
  });
});
