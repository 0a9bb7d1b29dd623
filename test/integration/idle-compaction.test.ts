import { describe, expect, it } from "vitest";
import { createConversation } from "../../actors/conversation.js";
import { defaultConfig, parseConfig } from "../../src/config/index.js";
import { getConsolidationState } from "../../src/memory/session-state.js";
import type { ChatMessage } from "../../src/providers/messages.js";
import { appendMessagesOps, getSessionMeta, newSessionMeta } from "../../src/store/sessions.js";
import type { Store } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi, type RecordedRequest } from "../fixtures/fake-openai.js";
import { countingTools, turnDeps } from "../helpers/turn-env.js";
import { useTempDirs } from "../helpers/tmp.js";
import { closeAfterEach } from "../helpers/teardown.js";

const MIN = 60_000;
const T0 = Date.UTC(2026, 4, 13, 14, 30);
const isSummaryCall = (r: RecordedRequest) => String(r.body.messages[0]?.content).startsWith("You are troupe's memory consolidator");

/** nanobot's _add_turns: user/assistant pairs. */
const turns = (n: number, prefix = "msg"): ChatMessage[] =>
  Array.from({ length: n }, (_, i): ChatMessage[] => [
    { role: "user", content: `${prefix} user ${i}` },
    { role: "assistant", content: `${prefix} assistant ${i}` },
  ]).flat();

describe("idle compaction (nanobot's AutoCompact, agents.defaults.idleCompactAfterMinutes)", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let store: Store | undefined;
  closeAfterEach(() => [store, fake]);

  /** A conversation on a clock the test moves, with a session of `n` turns last active at T0. */
  async function setup(n: number, idleMinutes?: number) {
    fake = await startFakeOpenAi([], (r) => (isSummaryCall(r) ? { content: "- [durable] the user practised past tense" } : { content: "answer" }));
    const dir = await tempDir();
    const deps = await turnDeps(dir, fake.url, countingTools().registry, false);
    store = deps.store;
    const config = defaultConfig();
    if (idleMinutes !== undefined) config.agents.defaults.idleCompactAfterMinutes = idleMinutes;
    const clock = { t: T0 };
    const conversation = createConversation({ ...deps, config, now: () => clock.t });
    await store.batch(appendMessagesOps(newSessionMeta("cli:test", T0), turns(n), null, T0).ops, { sync: true });
    const ask = async (content: string) => {
      await conversation.handle({ sessionKey: "cli:test", channel: "cli", chatId: "test", content });
      return fake!.requests.findLast((r) => !isSummaryCall(r))!.body.messages;
    };
    return { clock, conversation, ask, deps };
  }

  it("defaults to 15 minutes; nanobot's sessionTtlMinutes is read as it, and neither is reported as unsupported", () => {
    expect(defaultConfig().agents.defaults.idleCompactAfterMinutes).toBe(15);
    const legacy = parseConfig({ agents: { defaults: { sessionTtlMinutes: 30 } } }, "c.json");
    expect(legacy.config.agents.defaults.idleCompactAfterMinutes).toBe(30);
    const both = parseConfig({ agents: { defaults: { idleCompactAfterMinutes: 0, session_ttl_minutes: 30 } } }, "c.json");
    expect(both.config.agents.defaults.idleCompactAfterMinutes).toBe(0);
    expect([...legacy.warnings, ...both.warnings].join("\n")).not.toMatch(/idleCompactAfterMinutes \[|sessionTtlMinutes \[/);
    expect(() => parseConfig({ agents: { defaults: { idleCompactAfterMinutes: -1 } } }, "c.json")).toThrow(/idleCompactAfterMinutes/);
  });

  it("a session idle past the limit is archived but for its last 8 messages before its next turn, which gets the summary", async () => {
    const { clock, conversation, ask } = await setup(20);
    clock.t = T0 + 16 * MIN;
    const sent = await ask("Let's continue");
    expect(fake!.requests.filter(isSummaryCall)).toHaveLength(1);
    // system, the last 8 stored messages, the new message.
    expect(sent).toHaveLength(10);
    expect(sent.slice(1, 9).map((m) => m.content)).toEqual(turns(20).slice(-8).map((m) => m.content));
    expect(String(sent[1]!.content)).toBe("msg user 16");
    expect(String(sent[0]!.content)).toContain("# Recent History");
    expect(String(sent[0]!.content)).toContain("the user practised past tense");
    // Archived as the Consolidator archives: the history entry names the range, the session's state moved past it.
    const entries = await conversation.memory.readHistory();
    expect(entries.map((e) => [e.session_key, e.archived?.from, e.archived?.to])).toEqual([["cli:test", 0, 32]]);
    const meta = (await getSessionMeta(store!, "cli:test"))!;
    expect((await getConsolidationState(store!, meta)).lastConsolidated).toBe(32);

    // A quick follow-up is not idle: nothing more is archived.
    clock.t += 1 * MIN;
    expect(await ask("and then?")).toHaveLength(12);
    expect(fake!.requests.filter(isSummaryCall)).toHaveLength(1);

    // nanobot: test_session_can_be_compacted_again_after_new_messages.
    clock.t += 20 * MIN;
    const again = await ask("back again");
    expect(fake!.requests.filter(isSummaryCall)).toHaveLength(2);
    expect(again).toHaveLength(10);
    // 12 unarchived (the 8 kept, two turns since): the oldest 4 go.
    expect(again.slice(1, 9).map((m) => m.content)).toEqual(["msg user 18", "msg assistant 18", "msg user 19", "msg assistant 19", "Let's continue", "answer", "and then?", "answer"]);
  });

  it("under the limit nothing is archived: the whole session is sent", async () => {
    const { clock, ask } = await setup(20);
    clock.t = T0 + 14 * MIN + 59_000;
    const sent = await ask("still here");
    expect(fake!.requests.filter(isSummaryCall)).toHaveLength(0);
    expect(sent).toHaveLength(42);
  });

  it("0 never compacts", async () => {
    const { clock, ask } = await setup(20, 0);
    clock.t = T0 + 365 * 24 * 60 * MIN;
    const sent = await ask("a year later");
    expect(fake!.requests.filter(isSummaryCall)).toHaveLength(0);
    expect(sent).toHaveLength(42);
  });

  it("a failed write between the history entry and the session's state is caught up from the entry, never archived twice", async () => {
    const { clock, deps } = await setup(20);
    // The state's write fails once, after the synced history entry.
    let failed = false;
    const crashing = new Proxy(store!, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (prop !== "batch" || typeof value !== "function") return typeof value === "function" ? value.bind(target) : value;
        return (ops: Array<{ key: string }>, opts: unknown) => {
          if (!failed && ops.some((op) => op.key === "consolidated:cli:test")) {
            failed = true;
            return Promise.reject(new Error("killed"));
          }
          return (value as (o: unknown, p: unknown) => Promise<void>).call(target, ops, opts);
        };
      },
    });
    clock.t = T0 + 16 * MIN;
    const first = createConversation({ ...deps, store: crashing, config: defaultConfig(), now: () => clock.t });
    await first.handle({ sessionKey: "cli:test", channel: "cli", chatId: "test", content: "hello" });
    expect(failed).toBe(true);
    expect(fake!.requests.filter(isSummaryCall)).toHaveLength(1);
    // The turn's read of the session found the entry: 32 archived, the last 8 sent.
    expect(fake!.requests.findLast((r) => !isSummaryCall(r))!.body.messages).toHaveLength(10);
    const meta = (await getSessionMeta(store!, "cli:test"))!;
    expect((await getConsolidationState(store!, meta)).lastConsolidated).toBe(32);
    // Restarted (a new conversation on the same store and workspace) a minute later: nothing is archived again.
    clock.t += MIN;
    const second = createConversation({ ...deps, config: defaultConfig(), now: () => clock.t });
    await second.handle({ sessionKey: "cli:test", channel: "cli", chatId: "test", content: "again" });
    expect((await getConsolidationState(store!, meta)).lastConsolidated).toBe(32);
    expect(fake!.requests.filter(isSummaryCall)).toHaveLength(1);
    expect(await second.memory.readHistory()).toHaveLength(1);
  });

  // nanobot: test_already_trimmed_session_skips.
  it("an idle session of 8 messages or fewer has nothing to archive", async () => {
    const { clock, ask } = await setup(4);
    clock.t = T0 + 60 * MIN;
    expect(await ask("hi")).toHaveLength(10);
    expect(fake!.requests.filter(isSummaryCall)).toHaveLength(0);
  });
});
