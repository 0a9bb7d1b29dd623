import { describe, expect, it } from "vitest";
import type { AnyActorRef } from "xstate";
import { createConversation } from "../../actors/conversation.js";
import { createSessionTurns } from "../../actors/session-turn.js";
import type { SessionEvent } from "../../machines/session.machine.js";
import { defaultConfig } from "../../src/config/index.js";
import type { Store, StoreOp } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { useTempDirs } from "../helpers/tmp.js";
import { countingTools, turnDeps } from "../helpers/turn-env.js";
import { closeAfterEach } from "../helpers/teardown.js";

const msg = (chat: string, content: string) => ({ sessionKey: `cli:${chat}`, channel: "cli", chatId: chat, content });

/** The store refuses every batch that `fails` picks (a full disk for the turn's final batch). */
function failBatches(store: Store, fails: (ops: StoreOp[]) => boolean) {
  const batch = store.batch.bind(store);
  store.batch = ((ops: StoreOp[], opts?: { sync?: boolean }) =>
    fails(ops) ? Promise.reject(new Error("disk full (test)")) : batch(ops, opts)) as Store["batch"];
}
/** Any batch that writes to the session (the turn's first checkpoint stores the user message). */
const writesSession = (ops: StoreOp[]) => ops.some((op) => op.sublevel === "sessions");
/** The turn's final batch: the one that puts its reply in the outbox. */
const putsReply = (ops: StoreOp[]) => ops.some((op) => op.sublevel === "outbox");

describe("per-session state is let go when the session ends or its turn fails", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let store: Store | undefined;
  closeAfterEach(() => [store, fake]);

  it("many sessions started and passivated leave bounded usage and no kept history; /status still shows a recent one's usage", async () => {
    fake = await startFakeOpenAi([], async (_req, i) => ({ content: `answer ${i}`, usage: { prompt_tokens: 100 + i, completion_tokens: 7 } }));
    const deps = await turnDeps(await tempDir(), fake.url, countingTools().registry);
    store = deps.store;
    const conversation = createConversation({ ...deps, config: defaultConfig(), lastUsageKept: 5 });
    for (let i = 0; i < 12; i++) {
      await conversation.handle(msg(`c${i}`, "hello"));
      conversation.forget(`cli:c${i}`);
    }
    expect(conversation.held()).toEqual({ lastUsage: 5, started: 0, consolidator: 0 });
    // The most recent session's last turn is still shown; the oldest one's has gone.
    expect((await conversation.handle(msg("c11", "/status"))).content).toMatch(/Tokens: 111 in \/ 7 out/);
    expect((await conversation.handle(msg("c0", "/status"))).content).toMatch(/Tokens: no turn yet/);
  });

  it("counts the unarchived messages a live session's kept history holds, none once it ends", async () => {
    fake = await startFakeOpenAi([], async () => ({ content: "answer" }));
    const deps = await turnDeps(await tempDir(), fake.url, countingTools().registry);
    store = deps.store;
    const conversation = createConversation({ ...deps, config: defaultConfig() });
    for (let i = 0; i < 3; i++) await conversation.handle(msg("a", `hello ${i}`));
    // Kept as read when the session's last turn started: the two turns before it, a question and an answer each.
    expect(conversation.consolidator.keptMessages()).toBe(4);
    conversation.forget("cli:a");
    expect(conversation.consolidator.keptMessages()).toBe(0);
  });

  it("a turn whose checkpoint fails leaves nothing behind once its session ends", async () => {
    fake = await startFakeOpenAi([], async () => ({ content: "answer" }));
    const deps = await turnDeps(await tempDir(), fake.url, countingTools().registry);
    store = deps.store;
    failBatches(deps.store, writesSession);
    const conversation = createConversation({ ...deps, config: defaultConfig() });
    await expect(conversation.handle(msg("a", "hello"))).rejects.toThrow(/disk full/);
    conversation.forget("cli:a");
    expect(conversation.held()).toMatchObject({ started: 0, consolidator: 0 });
  });

  it("a session turn whose final batch fails does not keep its reply", async () => {
    fake = await startFakeOpenAi([], async () => ({ content: "answer" }));
    const deps = await turnDeps(await tempDir(), fake.url, countingTools().registry);
    store = deps.store;
    const conversation = createConversation({ ...deps, config: defaultConfig() });
    const sessionTurns = createSessionTurns({ ...deps, conversation });
    failBatches(deps.store, putsReply);
    const events: SessionEvent[] = [];
    const self = { getSnapshot: () => ({ status: "active" }), send: (e: SessionEvent) => void events.push(e) } as unknown as AnyActorRef;
    const prepared = await conversation.prepare(msg("a", "hello"));
    sessionTurns.turns.start(prepared);
    sessionTurns.watchTurn({ self }, { sessionKey: "cli:a", turnId: prepared.input.turnId });
    await expect.poll(() => events.map((e) => e.type), { timeout: 20_000 }).toEqual(["turn.failed"]);
    expect(sessionTurns.held()).toEqual({ replies: 0 });
  });
});
