import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createConversation } from "../../actors/conversation.js";
import { defaultConfig } from "../../src/config/index.js";
import { MAX_CHUNK_MESSAGES, pickBoundary } from "../../src/memory/archive-chunks.js";
import { createConsolidator } from "../../src/memory/consolidator.js";
import { createMemoryFiles } from "../../src/memory/files.js";
import { consolidationStateOp, getConsolidationState } from "../../src/memory/session-state.js";
import { exactCost, messagesTokens } from "../../src/memory/tokens.js";
import type { ChatMessage } from "../../src/providers/messages.js";
import { appendMessagesOps, getSessionMeta, newSessionMeta, sessionMessages } from "../../src/store/sessions.js";
import type { Store } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi, type FakeStep, type RecordedRequest } from "../fixtures/fake-openai.js";
import { countingTools, turnDeps } from "../helpers/turn-env.js";
import { useTempDirs } from "../helpers/tmp.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** V8's gc(), for the tests that check what is still held (a fresh context sees the flag once set). */
function fullGc(): void {
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}

/** Whether each object is still reachable, after a full collection (WeakRefs are cleared only after the job that made them). */
async function stillHeld(refs: Array<WeakRef<object>>): Promise<number> {
  await new Promise((r) => setTimeout(r, 0));
  fullGc();
  return refs.filter((r) => r.deref() !== undefined).length;
}

const words = (n: number, w = "apple") => Array.from({ length: n }, () => w).join(" ");
const isSummaryCall = (r: RecordedRequest) => String(r.body.messages[0]?.content).startsWith("You are troupe's memory consolidator");

/** `turns` turns of user + assistant, each message about `size` tokens. */
function conversationOf(turns: number, size: number): ChatMessage[] {
  return Array.from({ length: turns }, (_, i): ChatMessage[] => [
    { role: "user", content: `question ${i} ${words(size)}` },
    { role: "assistant", content: `answer ${i} ${words(size, "pear")}` },
  ]).flat();
}

async function seed(store: Store, key: string, messages: ChatMessage[]) {
  const meta = newSessionMeta(key, 1_000);
  await store.batch(appendMessagesOps(meta, messages, null, 1_000).ops, { sync: true });
}

describe("the Consolidator", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let store: Store | undefined;
  closeAfterEach(() => [store, fake]);

  async function setup(handler: (r: RecordedRequest, i: number) => FakeStep | undefined, budget: number) {
    fake = await startFakeOpenAi([], handler);
    const dir = await tempDir();
    const deps = await turnDeps(dir, fake.url, countingTools().registry, false);
    store = deps.store;
    const files = createMemoryFiles(dir);
    const consolidator = createConsolidator({ store, provider: deps.provider, files, budget, fixedTokens: async () => exactCost(100) });
    return { dir, deps, files, consolidator };
  }

  it("does nothing under the budget", async () => {
    const { consolidator, files } = await setup(() => ({ content: "- [durable] x" }), 10_000);
    await seed(store!, "t:1", conversationOf(5, 50));
    expect(await consolidator.maybeConsolidate("t:1")).toBe(0);
    expect(await files.readHistory()).toEqual([]);
    expect(fake!.requests.length).toBe(0);
  });

  it("archives the oldest messages at user boundaries down to half the budget, with the model's summary", async () => {
    const budget = 4_000;
    const { consolidator, files } = await setup((r) => (isSummaryCall(r) ? { content: "- [durable] the user asked about apples" } : undefined), budget);
    const messages = conversationOf(20, 100); // ~4,100 tokens + 100 fixed: over the budget
    await seed(store!, "t:1", messages);
    expect(messagesTokens(messages) + 100).toBeGreaterThanOrEqual(budget);
    const rounds = await consolidator.maybeConsolidate("t:1");
    expect(rounds).toBeGreaterThan(0);
    const entries = await files.readHistory();
    expect(entries.length).toBe(rounds);
    // The count the soak bench prints (GET /api/status): chunks archived since the daemon started.
    expect(consolidator.archivedChunks()).toBe(rounds);
    for (const e of entries) {
      expect(e).toMatchObject({ content: "- [durable] the user asked about apples", session_key: "t:1" });
      expect(messages[e.archived!.from]!.role).toBe("user");
      expect(messages[e.archived!.to]!.role).toBe("user");
    }
    const v = (await consolidator.view("t:1"))!;
    expect(v.state.lastConsolidated).toBe(entries.at(-1)!.archived!.to);
    expect(messagesTokens(messages.slice(v.state.lastConsolidated)) + 100).toBeLessThanOrEqual(budget / 2);
    // The summariser saw the chunk as dated lines, in nanobot's format.
    const summaryCall = fake!.requests.find(isSummaryCall)!;
    expect(String(summaryCall.body.messages[1]!.content)).toMatch(/^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}\] USER: question 0 /);
  });

  it("holds at most 60 messages a chunk and stops after 5 rounds", async () => {
    const { consolidator, files } = await setup((r) => (isSummaryCall(r) ? { content: "- [skip] chatter" } : undefined), 4_000);
    const messages = conversationOf(400, 12); // 800 small messages, far over the budget
    await seed(store!, "t:1", messages);
    expect(await consolidator.maybeConsolidate("t:1")).toBe(5);
    const entries = await files.readHistory();
    expect(entries.length).toBe(5);
    for (const e of entries) expect(e.archived!.to - e.archived!.from).toBeLessThanOrEqual(MAX_CHUNK_MESSAGES);
    expect(entries.map((e) => e.archived!.from)).toEqual([0, 60, 120, 180, 240]);
  });

  it("never splits a turn: a boundary is a user message, even past 60 messages when no user message comes sooner", () => {
    const tools: ChatMessage[] = Array.from({ length: 80 }, (_, i) => ({ role: "tool", tool_call_id: `c${i}`, content: "x" }));
    const messages: ChatMessage[] = [{ role: "user", content: "go" }, ...tools, { role: "user", content: "next" }, { role: "assistant", content: "ok" }];
    expect(pickBoundary(messages, 0, 1_000_000)).toMatchObject({ end: 81 });
    expect(pickBoundary([{ role: "user", content: "only" }, { role: "assistant", content: "turn" }], 0, 1)).toBeUndefined();
  });

  it("archives the raw messages with a [RAW] marker when the summary call fails, and stops for this round", async () => {
    const { consolidator, files } = await setup((r) => (isSummaryCall(r) ? { status: 400, errorMessage: "bad request" } : undefined), 4_000);
    await seed(store!, "t:1", conversationOf(20, 100));
    expect(await consolidator.maybeConsolidate("t:1")).toBe(1);
    const [entry] = await files.readHistory();
    expect(entry!.content).toMatch(/^\[RAW\] \d+ messages\n\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}\] USER: question 0 apple/);
    expect((await consolidator.view("t:1"))!.state.lastConsolidated).toBe(entry!.archived!.to);
  });

  it("writes no entry for (nothing) but still moves past the chunk", async () => {
    const { consolidator, files } = await setup((r) => (isSummaryCall(r) ? { content: "(nothing)" } : undefined), 4_000);
    await seed(store!, "t:1", conversationOf(20, 100));
    await consolidator.maybeConsolidate("t:1");
    expect(await files.readHistory()).toEqual([]);
    expect((await consolidator.view("t:1"))!.state.lastConsolidated).toBeGreaterThan(0);
  });

  it("after a crash between the history entry and the store, catches up from the entry instead of archiving twice", async () => {
    const { consolidator, files } = await setup((r) => (isSummaryCall(r) ? { content: "- [durable] once" } : undefined), 4_000);
    await seed(store!, "t:1", conversationOf(20, 100));
    const meta = (await getSessionMeta(store!, "t:1"))!;
    // What a kill -9 right after the append leaves: the entry, and the store still at 0.
    await files.appendHistory({ content: "- [durable] once", sessionKey: "t:1", archived: { epoch: 0, from: 0, to: 10, createdAt: meta.createdAt } });
    expect((await getConsolidationState(store!, meta)).lastConsolidated).toBe(0);
    expect((await consolidator.view("t:1"))!.state.lastConsolidated).toBe(10);
    await consolidator.maybeConsolidate("t:1");
    const entries = await files.readHistory();
    expect(entries[1]?.archived?.from ?? 10).toBe(10);
    const covered = entries.flatMap((e) => Array.from({ length: e.archived!.to - e.archived!.from }, (_, i) => e.archived!.from + i));
    expect(new Set(covered).size).toBe(covered.length);
    // An entry of an earlier incarnation of the key (deleted and recreated) does not count.
    await store!.batch([consolidationStateOp("t:1", { epoch: 0, lastConsolidated: 0, createdAt: 5 })], { sync: true });
    expect((await getConsolidationState(store!, meta)).lastConsolidated).toBe(0);
  });

  it("a failed store write after the history entry is caught up on the next read in the same process, not archived twice", async () => {
    const { consolidator, files } = await setup((r) => (isSummaryCall(r) ? { content: "- [durable] once" } : undefined), 4_000);
    await seed(store!, "t:1", conversationOf(20, 100));
    // Read once, so the session's messages are kept: the next read would not look at history.jsonl for them.
    expect((await consolidator.view("t:1"))!.state.lastConsolidated).toBe(0);
    const batch = store!.batch.bind(store!);
    let failed = 0;
    store!.batch = async (ops, opts) => {
      if (!failed && ops.some((op) => op.key.startsWith("consolidated:"))) {
        failed++;
        throw new Error("disk full");
      }
      return batch(ops, opts);
    };
    await expect(consolidator.maybeConsolidate("t:1")).rejects.toThrow(/disk full/);
    const written = await files.readHistory();
    expect(written).toHaveLength(1);
    expect((await consolidator.view("t:1"))!.state.lastConsolidated).toBe(written[0]!.archived!.to);
    await consolidator.maybeConsolidate("t:1");
    const entries = await files.readHistory();
    const covered = entries.flatMap((e) => Array.from({ length: e.archived!.to - e.archived!.from }, (_, i) => e.archived!.from + i));
    expect(new Set(covered).size).toBe(covered.length);
  });

  it("keeps in memory only what is not archived: a live session's archived messages are let go (a long session's history does not grow in RAM)", async () => {
    const { consolidator } = await setup((r) => (isSummaryCall(r) ? { content: "- [durable] apples" } : undefined), 4_000);
    await seed(store!, "t:1", conversationOf(20, 100));
    let v = (await consolidator.view("t:1"))!;
    // The stored messages as the consolidator keeps them between turns, and the model-visible list a turn's history is taken from.
    const refs = v.messages.map((m) => new WeakRef(m));
    const inner = v.messages.map((m) => new WeakRef(m.message));
    expect(consolidator.unarchived(v).messages).toHaveLength(40);
    v = undefined!;
    expect(await consolidator.maybeConsolidate("t:1")).toBeGreaterThan(0);
    const after = (await consolidator.view("t:1"))!;
    const archived = after.state.lastConsolidated;
    expect(archived).toBeGreaterThan(0);
    // The tail is still the same objects (read once, not again), the archived ones are gone.
    expect(after.messages.slice(archived).every((m, i) => m === refs[archived + i]!.deref())).toBe(true);
    expect(after.messages).toHaveLength(40);
    expect(after.messages.slice(archived).map((m) => m.seq)).toEqual(Array.from({ length: 40 - archived }, (_, i) => archived + i));
    expect(await stillHeld(refs.slice(0, archived))).toBe(0);
    expect(await stillHeld(refs.slice(archived))).toBe(40 - archived);
    expect(await stillHeld(inner.slice(0, archived))).toBe(0);
    expect(consolidator.unarchived(after).messages).toEqual(after.messages.slice(archived).map((m) => m.message));
  });

  it("/new archives the unarchived tail in chunks, then starts a fresh session; the next turn does not see the old messages", async () => {
    fake = await startFakeOpenAi([], (r) => (isSummaryCall(r) ? { content: `- [durable] summary ${fake!.requests.filter(isSummaryCall).length}` } : { content: "fresh answer" }));
    const dir = await tempDir();
    const deps = await turnDeps(dir, fake.url, countingTools().registry, false);
    store = deps.store;
    const conversation = createConversation({ ...deps, config: defaultConfig() });
    await seed(store, "cli:a", conversationOf(40, 5));
    const reply = await conversation.handle({ sessionKey: "cli:a", channel: "cli", chatId: "a", content: "/new" });
    expect(reply.content).toMatch(/80 message\(s\) archived/);
    const entries = await conversation.memory.readHistory();
    expect(entries.map((e) => [e.archived!.from, e.archived!.to])).toEqual([
      [0, 60],
      [60, 80],
    ]);
    const history = await readFile(join(dir, "memory", "history.jsonl"), "utf8");
    expect(history).toContain("summary 1");
    // The new epoch is empty; the Recent History in the system prompt carries the summaries.
    await conversation.handle({ sessionKey: "cli:a", channel: "cli", chatId: "a", content: "hello again" });
    const last = fake.requests.at(-1)!.body.messages;
    expect(last.length).toBe(2);
    expect(String(last[0]!.content)).toContain("# Recent History");
    expect(String(last[0]!.content)).toMatch(/- \[\d{4}-\d{2}-\d{2} \d{2}:\d{2}\] - \[durable\] summary 1/);
    const meta = (await getSessionMeta(store, "cli:a"))!;
    expect(meta.epoch).toBe(1);
    expect((await sessionMessages(store, meta)).length).toBe(2);
  });

  it("a turn over the budget is consolidated first, and the model only gets the unarchived messages", async () => {
    fake = await startFakeOpenAi([], (r) => (isSummaryCall(r) ? { content: "- [durable] early talk" } : { content: "answer" }));
    const dir = await tempDir();
    const deps = await turnDeps(dir, fake.url, countingTools().registry, false);
    store = deps.store;
    const config = defaultConfig();
    config.agents.defaults.contextWindowTokens = 8_000;
    config.agents.defaults.maxTokens = 1_000;
    const conversation = createConversation({ ...deps, config });
    await seed(store, "cli:b", conversationOf(30, 100));
    await conversation.handle({ sessionKey: "cli:b", channel: "cli", chatId: "b", content: "and now?" });
    const turnCall = fake.requests.findLast((r) => !isSummaryCall(r))!;
    expect(fake.requests.some(isSummaryCall)).toBe(true);
    expect(String(turnCall.body.messages[1]!.content)).not.toMatch(/^question 0 /);
    expect(String(turnCall.body.messages[0]!.content)).toContain("early talk");
    const status = await conversation.handle({ sessionKey: "cli:b", channel: "cli", chatId: "b", content: "/status" });
    // nanobot's layout: the estimate against the window, its share of the input budget (8000 − 1000 − 1024).
    expect(status.content).toMatch(/📚 Context: \d+k?\/8k \(\d+% of input budget\)/);
    expect(status.content).toMatch(/💬 Session: 62 messages \(cli:b: \d+ turn\(s\), \d+ tokens in all; \d+ consolidated into memory\)/);
  });
});
