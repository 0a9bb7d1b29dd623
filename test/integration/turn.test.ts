import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool } from "../../src/tools/contract.js";
import { createToolRegistry } from "../../src/tools/registry.js";
import { startTurn } from "../../actors/turn.js";
import { INTERRUPTED_RESULT, planBatches } from "../../actors/run-tools.js";
import { getTurn, restoreMessages, type TurnRecord } from "../../src/store/turns.js";
import { stateJournal, toolJournal, toolJournalOp } from "../../src/store/turn-journal.js";
import type { ChatMessage } from "../../src/providers/messages.js";
import type { Store } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi, type FakeStep } from "../fixtures/fake-openai.js";
import { countingTools, turnDeps, turnInput } from "../helpers/turn-env.js";
import { useTempDirs } from "../helpers/tmp.js";
import { closeAfterEach } from "../helpers/teardown.js";

const multiToolScript: FakeStep[] = [
  {
    content: "Looking things up.",
    toolCalls: [
      { id: "a1", name: "lookup", arguments: { word: "alpha", delayMs: 80 } },
      { id: "a2", name: "lookup", arguments: { word: "beta", delayMs: 80 } },
      { id: "a3", name: "append_note", arguments: { text: "seen" } },
    ],
  },
  { toolCalls: [{ id: "b1", name: "lookup", arguments: '{"word": "gamma",}' }] },
  { content: "Alpha and beta are defined; noted." },
];

describe("turn machine", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let store: Store | undefined;
  closeAfterEach(() => [store, fake]);

  it("runs a multi-tool turn end to end, read-only calls concurrently, checkpointing every transition", async () => {
    fake = await startFakeOpenAi([...multiToolScript]);
    const tools = countingTools();
    const deps = await turnDeps(await tempDir(), fake.url, tools.registry);
    store = deps.store;
    const states: string[] = [];
    deps.bus?.ofType("turn_state").subscribe((e) => states.push(e.state));
    const result = await startTurn(deps, { input: turnInput("t1", "define alpha and beta") }).done;

    expect(result.state).toBe("responded");
    expect(result.output.reply).toBe("Alpha and beta are defined; noted.");
    expect(result.output.iteration).toBe(2);
    expect(result.output.usage.totalTokens).toBe(45);
    expect(result.output.newMessages.map((m) => m.role)).toEqual(["assistant", "tool", "tool", "tool", "assistant", "tool", "assistant"]);
    expect(tools.runs).toEqual(["lookup", "lookup", "append_note", "lookup"]);
    expect(tools.maxActive()).toBe(2);
    // The model saw the tool results of the first batch, in call order.
    const second = fake.requests[1]?.body.messages.slice(-3).map((m) => m.content);
    expect(second).toEqual(["definition of alpha", "definition of beta", "noted: seen"]);

    const expected = ["awaiting_model", "awaiting_tools", "tools_completed", "awaiting_model", "awaiting_tools", "tools_completed", "awaiting_model", "responded"];
    expect(states).toEqual(expected);
    const journal = await stateJournal(store, "t1");
    expect(journal.map((j) => j.state)).toEqual(expected);
    expect(journal.map((j) => j.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const record = await getTurn(store, "t1");
    expect(record?.final).toBe(true);
    expect(record?.state).toBe("responded");
  });

  it("a one-tool turn costs 4 synced batches: tool.started shares awaiting_tools', tools_completed the next checkpoint's, tool.completed rides on it", async () => {
    fake = await startFakeOpenAi([{ toolCalls: [{ id: "c1", name: "lookup", arguments: { word: "alpha" } }] }, { content: "done" }]);
    const deps = await turnDeps(await tempDir(), fake.url, countingTools().registry);
    store = deps.store;
    const synced: string[][] = [];
    const unsynced: string[][] = [];
    const batch = deps.store.batch.bind(deps.store);
    deps.store.batch = async (ops, opts) => {
      (opts?.sync ? synced : unsynced).push(ops.map((op) => `${op.type} ${op.sublevel} ${op.key.replace(/^t-count:/, "")}`));
      return batch(ops, opts);
    };
    const before = deps.store.commitStats.requests;
    const result = await startTurn(deps, { input: turnInput("t-count", "define alpha") }).done;
    expect(result.state).toBe("responded");
    // awaiting_model, awaiting_tools (with tool.started), awaiting_model (with tools_completed's journal entry), responded.
    expect(synced).toHaveLength(4);
    expect(deps.store.commitStats.requests - before).toBe(4);
    expect(synced[1]).toEqual(expect.arrayContaining([`put journal state:000002`, `put turns t-count`, `put journal tool:000001:000000`]));
    expect(synced[2]).toEqual(expect.arrayContaining([`put journal state:000003`, `put journal state:000004`, `put turns t-count`]));
    expect(synced[2]!.filter((op) => op.startsWith("put turns"))).toHaveLength(1);
    expect(unsynced).toEqual([["put journal tool:000001:000000"]]);
    // Every state is still in the journal, in order.
    expect((await stateJournal(store, "t-count")).map((j) => j.state)).toEqual(["awaiting_model", "awaiting_tools", "tools_completed", "awaiting_model", "responded"]);
    expect((await toolJournal(store, "t-count")).get("000001:000000")?.status).toBe("completed");
  });

  it("waits for the disk on a call's started record only where it keeps the call from running twice", async () => {
    // append_note runs first and alone, its started record riding on the awaiting_tools checkpoint;
    // lookup, in the next batch, writes its own.
    fake = await startFakeOpenAi([
      { toolCalls: [{ id: "n1", name: "append_note", arguments: { text: "seen" } }, { id: "l1", name: "lookup", arguments: { word: "alpha" } }] },
      { content: "done" },
    ]);
    const tools = countingTools();
    const deps = await turnDeps(await tempDir(), fake.url, tools.registry);
    store = deps.store;
    const started: Array<{ name: string; sync: boolean; withCheckpoint: boolean }> = [];
    const batch = store.batch.bind(store);
    store.batch = async (ops, opts) => {
      const withCheckpoint = ops.some((op) => op.sublevel === "turns");
      for (const op of ops) {
        const record = op.type === "put" && op.sublevel === "journal" ? (op.value as { kind?: string; status?: string; name?: string }) : undefined;
        if (record?.kind === "tool" && record.status === "started") started.push({ name: record.name!, sync: opts?.sync === true, withCheckpoint });
      }
      return batch(ops, opts);
    };
    expect((await startTurn(deps, { input: turnInput("t1", "note and look up") }).done).state).toBe("responded");
    // lookup is read-only (run again after a crash anyway); append_note is neither read-only nor idempotent.
    expect(started).toEqual([
      { name: "append_note", sync: true, withCheckpoint: true },
      { name: "lookup", sync: false, withCheckpoint: false },
    ]);
  });

  it("writes each checkpoint before the effect that follows it starts", async () => {
    fake = await startFakeOpenAi([{ toolCalls: [{ id: "p1", name: "probe", arguments: {} }] }, { content: "ok" }]);
    const seenByTool: Array<string | undefined> = [];
    const registry = createToolRegistry([
      defineTool({
        name: "probe",
        description: "Reads the turn's own checkpoint.",
        parameters: z.object({}),
        execute: async () => {
          const record = await getTurn(deps.store, "t-probe");
          seenByTool.push(`${record?.state}#${record?.seq}`);
          return "probed";
        },
      }),
    ]);
    const deps = await turnDeps(await tempDir(), fake.url, registry);
    store = deps.store;
    const result = await startTurn(deps, { input: turnInput("t-probe", "go") }).done;
    expect(result.state).toBe("responded");
    expect(seenByTool).toEqual(["awaiting_tools#2"]);
  });

  it("plans batches: consecutive read-only calls together, others alone", () => {
    const { registry } = countingTools();
    const call = (name: string, id: string) => ({ id, name, rawArguments: "{}", arguments: {} });
    const batches = planBatches([call("lookup", "a"), call("lookup", "b"), call("append_note", "c"), call("lookup", "d")], registry);
    expect(batches.map((b) => b.map((c) => c.id))).toEqual([["a", "b"], ["c"], ["d"]]);
  });

  it("a turn restored from each checkpoint ends with the same messages and never re-runs completed tools", async () => {
    // The fake model answers by conversation position, so a restored turn gets the same answers.
    fake = await startFakeOpenAi([], (req) => multiToolScript[req.body.messages.filter((m) => m.role === "assistant").length]);
    const tools = countingTools();
    const deps = await turnDeps(await tempDir(), fake.url, tools.registry);
    store = deps.store;
    const checkpoints: TurnRecord[] = [];
    const inputsWritten: unknown[] = [];
    const added: ChatMessage[] = [];
    const sizes: number[] = [];
    const batch = deps.store.batch.bind(deps.store);
    deps.store.batch = async (ops, opts) => {
      sizes.push(ops.reduce((n, op) => n + (op.type === "put" ? JSON.stringify(op.value).length : 0), 0));
      for (const op of ops) {
        if (op.type !== "put") continue;
        if (op.sublevel === "turns") checkpoints.push(structuredClone(op.value as TurnRecord));
        if (op.key === "ref:input") inputsWritten.push(op.value);
        if (op.key.startsWith("ref:msg:")) added[Number(op.key.slice("ref:msg:".length)) - input.messages.length] = (op.value as { message: ChatMessage }).message;
      }
      return batch(ops, opts);
    };
    // A long history: no checkpoint may carry it again, only the first writes the input.
    const input = { ...turnInput("ref", "define alpha and beta"), messages: [{ role: "system" as const, content: "s".repeat(20_000) }, ...turnInput("ref", "define alpha and beta").messages] };
    const reference = await startTurn(deps, { input }).done;
    // The input is stored once, beside the first checkpoint; the records carry neither it nor any message.
    expect(inputsWritten).toEqual([{ input }]);
    expect(checkpoints.every((c) => c.input === undefined && c.snapshot.context.messages.length === 0)).toBe(true);
    expect(checkpoints.every((c) => !JSON.stringify(c).includes("s".repeat(100)))).toBe(true);
    // Format 5 stores nothing restore rebuilds: no child input repeats the turn's fields or its tool
    // calls, no XState default; the final record no output (the session holds it).
    const children = checkpoints.flatMap((c) => Object.values((c.snapshot as { children?: Record<string, { snapshot: { input: object }; syncSnapshot?: boolean }> }).children ?? {}));
    expect(children.length).toBeGreaterThan(0);
    expect(children.every((c) => !("turnId" in c.snapshot.input) && !("calls" in c.snapshot.input) && !("messages" in c.snapshot.input) && !("syncSnapshot" in c))).toBe(true);
    expect(checkpoints.every((c) => !("historyValue" in c.snapshot))).toBe(true);
    expect(checkpoints.filter((c) => c.final).map((c) => "output" in c.snapshot)).toEqual([false]);
    expect(sizes.slice(1).every((n) => n < 10_000)).toBe(true);
    // Finished, the turn keeps its record and journal; its input and messages are pruned (the session has them).
    const final = await getTurn(deps.store, "ref");
    expect(final?.final).toBe(true);
    expect(final?.input).toBeUndefined();
    expect(reference.state).toBe("responded");
    const referenceJournal = await toolJournal(deps.store, "ref");
    const resumable = checkpoints.filter((c) => !c.final);
    // tools_completed's checkpoint shares the next one's batch: no record of its own is written.
    expect(resumable.map((c) => c.state)).toEqual(["awaiting_model", "awaiting_tools", "awaiting_model", "awaiting_tools", "awaiting_model"]);

    for (const record of resumable) {
      // Restoring under the same turn id in a store whose journal says every tool had completed.
      const runsBefore = tools.runs.length;
      const result = await startTurn(deps, { record: restoreMessages(record, input, added) }).done;
      expect(result.state, `restored from ${record.state}#${record.seq}`).toBe("responded");
      expect(result.output.newMessages).toEqual(reference.output.newMessages);
      expect(tools.runs.length, `tools re-run after restore from ${record.state}#${record.seq}`).toBe(runsBefore);
      expect((await toolJournal(deps.store, "ref")).size).toBe(referenceJournal.size);
    }
    // A format-2 record (every message in its snapshot, no messageCount) still resumes, and its
    // next checkpoint stores the turn's messages under their own keys.
    const older = restoreMessages(resumable[2]!, input, added);
    const { messageCount: _count, ...format2 } = { ...older, format: 2 };
    added.length = 0;
    const result = await startTurn(deps, { record: format2 }).done;
    expect(result.output.newMessages).toEqual(reference.output.newMessages);
    expect(added.length).toBeGreaterThanOrEqual(older.snapshot.context.messages.length - input.messages.length);
  });

  it("a format-4 record (its snapshot whole but for the messages, as XState persisted it) still resumes", async () => {
    fake = await startFakeOpenAi([{ content: "Alpha is defined." }]);
    const tools = countingTools();
    const deps = await turnDeps(await tempDir(), fake.url, tools.registry);
    store = deps.store;
    const input = turnInput("old4", "define alpha");
    const call = { id: "c1", name: "lookup", rawArguments: '{"word":"alpha"}', arguments: { word: "alpha" } };
    const fields = { turnId: "old4", sessionKey: input.sessionKey, channel: input.channel, chatId: input.chatId };
    const usage = { promptTokens: 10, completionTokens: 5, totalTokens: 15 };
    // As troupe wrote it before format 5: historyValue, injected, syncSnapshot and the child's turn fields and calls inline.
    const snapshot = {
      status: "active",
      value: "awaiting_tools",
      historyValue: {},
      context: { ...fields, messages: [], firstNewIndex: 2, iteration: 1, maxIterations: 10, pendingToolCalls: [call], injected: [], injectedTaken: 0, takenIds: [], usage, models: ["custom/fake-model"], reply: null, error: null, seq: 2, emptyAnswers: 0, continuation: [] },
      children: { "0.turn.awaiting_tools": { snapshot: { status: "active", input: { ...fields, seq: 2, iteration: 1, calls: [call] } }, src: "runTools", syncSnapshot: false } },
    };
    const assistant = { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "lookup", arguments: '{"word":"alpha"}' } }] };
    await deps.store.batch(
      [
        { type: "put", sublevel: "turns", key: "old4", value: { format: 4, turnId: "old4", sessionKey: input.sessionKey, state: "awaiting_tools", final: false, seq: 2, snapshot, createdAt: 1, updatedAt: 1, resumes: 0, messageCount: 3 } },
        { type: "put", sublevel: "journal", key: "old4:input", value: { input } },
        { type: "put", sublevel: "journal", key: "old4:msg:000002", value: { message: assistant } },
      ],
      { sync: true },
    );
    const record = await getTurn(deps.store, "old4");
    expect(record?.format).toBe(4);
    const result = await startTurn(deps, { record: record! }).done;
    expect(result.state).toBe("responded");
    expect(tools.runs).toEqual(["lookup"]);
    expect(result.output.newMessages.map((m) => m.role)).toEqual(["assistant", "tool", "assistant"]);
    expect(result.output.usage.totalTokens).toBe(30);
    expect(fake.requests[0]?.body.messages.at(-1)?.content).toBe("definition of alpha");
  });

  it("an interrupted non-idempotent call is not re-run; an interrupted read-only call is", async () => {
    fake = await startFakeOpenAi([], (req) =>
      req.body.messages.some((m) => m.role === "tool")
        ? { content: "done" }
        : { toolCalls: [{ id: "c1", name: "append_note", arguments: { text: "once" } }, { id: "c2", name: "lookup", arguments: { word: "w" } }] },
    );
    const tools = countingTools();
    const deps = await turnDeps(await tempDir(), fake.url, tools.registry);
    store = deps.store;
    // The turn's checkpoint at awaiting_tools, as a run of it wrote it.
    const input = turnInput("t9", "go");
    let atTools: TurnRecord | undefined;
    const added: ChatMessage[] = [];
    const batch = deps.store.batch.bind(deps.store);
    deps.store.batch = async (ops, opts) => {
      for (const op of ops) {
        if (op.type === "put" && op.sublevel === "turns" && (op.value as TurnRecord).state === "awaiting_tools") atTools ??= structuredClone(op.value as TurnRecord);
        if (op.type === "put" && op.key.startsWith("t9:msg:")) added[Number(op.key.slice("t9:msg:".length)) - input.messages.length] = (op.value as { message: ChatMessage }).message;
      }
      return batch(ops, opts);
    };
    await startTurn(deps, { input }).done;
    deps.store.batch = batch;
    tools.runs.length = 0;
    // Simulate a daemon that died there, after tool.started for both calls (format-1 entries, by call id).
    const ran = await deps.store.list("journal", z.unknown(), { prefix: "t9:tool:" });
    await deps.store.batch(ran.map((r) => ({ type: "del" as const, sublevel: "journal" as const, key: r.key })), { sync: true });
    for (const [callId, name] of [["c1", "append_note"], ["c2", "lookup"]] as const) {
      await deps.store.batch([toolJournalOp({ kind: "tool", turnId: "t9", callId, name, args: {}, status: "started", at: 0 })], { sync: true });
    }
    const result = await startTurn(deps, { record: restoreMessages(atTools!, input, added) }).done;
    expect(result.state).toBe("responded");
    expect(tools.runs).toEqual(["lookup"]);
    const toolMsgs = result.output.newMessages.filter((m) => m.role === "tool").map((m) => m.content);
    expect(toolMsgs).toEqual([INTERRUPTED_RESULT, "definition of w"]);
  });

  it("malformed tool arguments go back to the model as a tool error", async () => {
    fake = await startFakeOpenAi([{ toolCalls: [{ name: "lookup", arguments: "{{{:::" }] }, { content: "sorry" }]);
    const tools = countingTools();
    const deps = await turnDeps(await tempDir(), fake.url, tools.registry);
    store = deps.store;
    const result = await startTurn(deps, { input: turnInput("t2", "go") }).done;
    expect(result.state).toBe("responded");
    expect(tools.runs).toEqual([]);
    const toolMsg = result.output.newMessages.find((m) => m.role === "tool");
    expect(toolMsg?.content).toMatch(/^Error: could not parse the arguments for lookup: the arguments are not valid JSON/);
    expect(toolMsg?.content).toMatch(/try a different approach/);
  });

  it("ends in max_iterations with a reply saying so", async () => {
    fake = await startFakeOpenAi([], () => ({ toolCalls: [{ name: "lookup", arguments: { word: "again", delayMs: 1 } }] }));
    const tools = countingTools();
    const deps = await turnDeps(await tempDir(), fake.url, tools.registry);
    store = deps.store;
    const result = await startTurn(deps, { input: turnInput("t3", "loop", 3) }).done;
    expect(result.state).toBe("max_iterations");
    expect(result.output.reply).toMatch(/maximum number of tool iterations \(3\)/);
    // Three with tools, then one without them asking for a summary: it called a tool again, so the fixed text.
    expect(fake.requests).toHaveLength(4);
    expect(fake.requests.map((r) => Array.isArray(r.body.tools) && r.body.tools.length > 0)).toEqual([true, true, true, false]);
    expect(tools.runs).toHaveLength(3);
  });

  it("cancel ends in cancelled and closes open tool calls", async () => {
    fake = await startFakeOpenAi([{ toolCalls: [{ id: "slow", name: "lookup", arguments: { word: "x", delayMs: 2000 } }] }]);
    const tools = countingTools();
    const deps = await turnDeps(await tempDir(), fake.url, tools.registry);
    store = deps.store;
    const handle = startTurn(deps, { input: turnInput("t4", "go") });
    await new Promise<void>((resolve) => {
      const sub = deps.bus?.ofType("tool_hint").subscribe(() => {
        sub?.unsubscribe();
        resolve();
      });
    });
    handle.cancel();
    const result = await handle.done;
    expect(result.state).toBe("cancelled");
    expect(result.output.newMessages.map((m) => m.role)).toEqual(["assistant", "tool", "assistant"]);
    expect((await getTurn(store, "t4"))?.state).toBe("cancelled");
  });

  it("a model failure after retries ends in failed with a reply", async () => {
    fake = await startFakeOpenAi([{ status: 500 }, { status: 500 }, { status: 500 }]);
    const tools = countingTools();
    const deps = await turnDeps(await tempDir(), fake.url, tools.registry);
    store = deps.store;
    const result = await startTurn(deps, { input: turnInput("t5", "go") }).done;
    expect(result.state).toBe("failed");
    expect(result.output.reply).toMatch(/^Sorry, I could not finish this: model call to custom failed after 3 attempts: HTTP 500 from http:\/\/127\.0\.0\.1:\d+\/v1: the provider had a server error \(scripted 500\)$/);
  });
});

