import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Daemon } from "../../src/daemon-types.js";
import { InvalidSessionKeyError } from "../../src/session-key.js";
import { sessionInbox, sessionsWithInbox } from "../../src/store/inbox.js";
import type { Store, SublevelName } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { startSubagentModel } from "../fixtures/subagent-model.js";
import { replyTo, sendApi as send, startDaemon } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { sleep, until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";

/** Makes the store's next read of `sublevel` fail, as a disk error would. */
function failNextGet(store: Store, sublevel: SublevelName): void {
  const get = store.get.bind(store);
  let armed = true;
  store.get = (async (sub, key, schema) => {
    if (armed && sub === sublevel) {
      armed = false;
      throw new Error(`disk on fire (${sub}/${key})`);
    }
    return get(sub, key, schema);
  }) as Store["get"];
}

/** The daemon's log file, parsed. */
const logLines = async (d: Daemon) =>
  (await readFile(join(d.loaded.paths.logsDir, "troupe.log"), "utf8"))
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { level: number; msg: string; err?: { message?: string } });

const sessionIds = (d: Daemon) => (d.tree.tree()?.children ?? []).filter((c) => c.kind === "session").map((c) => c.id);

describe("daemon: supervisor, session actors, turn limit", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let daemon: Daemon | undefined;
  closeAfterEach(() => [daemon, fake]);

  it("runs a session's turns one at a time and injects a message that arrives mid-turn", async () => {
    fake = await startFakeOpenAi([
      { toolCalls: [{ name: "list_dir", arguments: {} }], delayMs: 300 },
      { content: "Both noted." },
      { content: "Third answered." },
    ]);
    daemon = await startDaemon(await tmp(), fake.url);
    const first = await send(daemon, "c1", "first");
    // Once the turn is at its first model call, the next message is injected into it.
    await until(() => fake!.requests.length === 1, 10_000, "the first model call");
    const second = await send(daemon, "c1", "second");
    const reply = await replyTo(daemon, first);
    expect(reply.content).toBe("Both noted.");
    expect(reply.answers).toEqual([first, second]);
    // The injected message joined the turn at its model-call boundary.
    const sent = fake.requests[1]?.body.messages ?? [];
    expect(sent.slice(-3).map((m) => m.role)).toEqual(["assistant", "tool", "user"]);
    expect(sent.at(-1)?.content).toBe("second");
    const third = await send(daemon, "c1", "third");
    expect((await replyTo(daemon, third)).content).toBe("Third answered.");
    expect(fake.maxInFlight()).toBe(1);
  });

  it("refuses a channel message whose session key is not printable text: nothing is stored or started", async () => {
    fake = await startFakeOpenAi([{ content: "never" }]);
    daemon = await startDaemon(await tmp(), fake.url);
    const d = daemon;
    await expect(d.accept("api", { chatId: "victim\u0000000000:evil", senderId: "u", content: "INJECTED" })).rejects.toThrow(
      /invalid session key "api:victim\\u\{0\}000000:evil": .*control character \(U\+0000\)/,
    );
    await expect(d.accept("telegram", { chatId: "42", senderId: "u", content: "x", sessionKey: "telegram:42\n" })).rejects.toThrow(InvalidSessionKeyError);
    await expect(d.accept("api", { chatId: "x".repeat(300), senderId: "u", content: "x" })).rejects.toThrow(/at most 200 characters/);
    expect(await sessionsWithInbox(d.store)).toEqual([]);
    expect(sessionIds(d)).toEqual([]);
    expect(fake.requests).toHaveLength(0);
  });

  it("/status answers at once while a turn runs, and /stop cancels it", async () => {
    fake = await startFakeOpenAi([{ content: "too late", delayMs: 5_000 }, { content: "after stop" }]);
    daemon = await startDaemon(await tmp(), fake.url);
    const slow = await send(daemon, "c2", "think hard");
    await sleep(150);
    const status = await send(daemon, "c2", "/status");
    const statusReply = await replyTo(daemon, status);
    expect(statusReply.content).toMatch(/^🎭 troupe v\S+\n🧠 Model: fake-model\n[\s\S]*\n⚡ Tasks: 1 active \(a turn\)\n[\s\S]*\nA turn is running; \/stop cancels it\.$/);
    const started = Date.now();
    const stop = await send(daemon, "c2", "/stop");
    expect((await replyTo(daemon, slow)).content).toBe("Stopped.");
    // Well before the model's 5 s answer: the turn was cancelled, not waited for.
    expect(Date.now() - started).toBeLessThan(4_000);
    void stop;
    const next = await send(daemon, "c2", "still there?");
    expect((await replyTo(daemon, next)).content).toBe("after stop");
  });

  it("/stop while waiting for a turn slot drops the queued messages, from the inbox too", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "slow answer", delayMs: 600 }));
    daemon = await startDaemon(await tmp(), fake.url, { defaults: { maxConcurrentTurns: 1 } });
    const busy = await send(daemon, "a", "keep the slot busy");
    await sleep(100);
    await send(daemon, "b", "queued one");
    await send(daemon, "b", "queued two");
    expect((await sessionInbox(daemon.store, "api:b")).map((m) => m.content)).toEqual(["queued one", "queued two"]);
    const stop = await send(daemon, "b", "/stop");
    expect((await replyTo(daemon, stop)).content).toBe("Stopped.");
    await sleep(50);
    expect(await sessionInbox(daemon.store, "api:b")).toEqual([]);
    await replyTo(daemon, busy);
    expect(fake.requests).toHaveLength(1);
  });

  it("passivates an idle session and brings it back, history intact, on its next message", async () => {
    fake = await startFakeOpenAi([{ content: "hello A" }, { content: "hello again" }]);
    daemon = await startDaemon(await tmp(), fake.url, { defaults: { sessionIdleSeconds: 1 } });
    const a = await send(daemon, "c3", "hi");
    await replyTo(daemon, a);
    expect(sessionIds(daemon)).toEqual(["session:api:c3"]);
    await sleep(1_300);
    expect(sessionIds(daemon)).toEqual([]);
    const b = await send(daemon, "c3", "me again");
    expect((await replyTo(daemon, b)).content).toBe("hello again");
    expect(fake.requests[1]?.body.messages.filter((m) => m.role !== "system").map((m) => m.role)).toEqual(["user", "assistant", "user"]);
    expect(sessionIds(daemon)).toEqual(["session:api:c3"]);
  });

  it("tool hints follow agents.defaults.toolHintMaxLength, for every kind of tool", async () => {
    const longPath = `notes/${"deep/".repeat(20)}file.md`;
    const longPattern = "TODO|FIXME|".repeat(20);
    fake = await startFakeOpenAi([
      { toolCalls: [{ name: "read_file", arguments: { path: longPath } }, { name: "grep", arguments: { pattern: longPattern } }] },
      { content: "done" },
    ]);
    daemon = await startDaemon(await tmp(), fake.url, { defaults: { toolHintMaxLength: 20 } });
    const hints: string[] = [];
    const sub = daemon.bus.ofType("tool_hint").subscribe((e) => hints.push(e.hint));
    await replyTo(daemon, await send(daemon, "h", "look"));
    sub.unsubscribe();
    expect(hints.length).toBeGreaterThan(0);
    // One line for the response's calls; each call's part within the limit.
    for (const part of hints.join(", ").split(", ")) expect(part.length).toBeLessThanOrEqual(28);
    expect(hints.join(", ")).toContain("…");
  });

  it("caps concurrent turns across sessions at maxConcurrentTurns, serving waiters in order", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "ok", delayMs: 150 }));
    daemon = await startDaemon(await tmp(), fake.url, { defaults: { maxConcurrentTurns: 2 } });
    // a and b first, both at their model call; then the others, which find both slots taken. (Sent
    // all at once, the sessions' loads from the store may finish in any order under load.)
    const first = await Promise.all(["a", "b"].map((c) => send(daemon!, c, `from ${c}`)));
    await until(() => fake!.requests.length === 2, 10_000, "a's and b's model calls");
    const rest = await Promise.all(["c", "d", "e"].map((c) => send(daemon!, c, `from ${c}`)));
    const ids = [...first, ...rest];
    await Promise.all(ids.map((id) => replyTo(daemon!, id)));
    expect(fake.maxInFlight()).toBe(2);
    // a and b took the two slots; the others could only start once one of them had finished.
    const order = fake.requests.map((r) => String(r.body.messages.at(-1)?.content).split("\n").at(-1));
    expect(order.slice(0, 2).sort()).toEqual(["from a", "from b"]);
    expect(order.slice(2).sort()).toEqual(["from c", "from d", "from e"]);
  });

  it("a store error while answering /status or /stop is logged and told to the user, and the daemon keeps answering", async () => {
    const model = await startSubagentModel({ subagentMs: 5_000 });
    fake = model.fake;
    daemon = await startDaemon(await tmp(), fake.url);
    const started = await send(daemon, "f", "please spawn 1");
    expect((await replyTo(daemon, started)).content).toBe("Started 1.");

    failNextGet(daemon.store, "sessions");
    const status = await send(daemon, "f", "/status");
    expect((await replyTo(daemon, status)).content).toBe("Sorry, /status failed: disk on fire (sessions/meta:api:f)");
    // /stop reads the running subagent's record to cancel it.
    failNextGet(daemon.store, "subagents");
    const stop = await send(daemon, "f", "/stop");
    expect((await replyTo(daemon, stop)).content).toMatch(/^Could not cancel subagents: disk on fire \(subagents\/sa-[0-9a-f]{10}\)$/);

    const again = await send(daemon, "f", "/status");
    expect((await replyTo(daemon, again)).content).toMatch(/💬 Session: \d+ messages \(api:f: 1 turn\(s\)/);
    const more = await send(daemon, "f", "please spawn 1");
    expect((await replyTo(daemon, more)).content).toBe("Started 1.");
    const stopped = await send(daemon, "f", "/stop");
    expect((await replyTo(daemon, stopped)).content).toBe("Cancelled 2 subagent(s).");

    const errors = (await logLines(daemon)).filter((l) => l.level === 50 && l.err?.message?.startsWith("disk on fire"));
    expect(errors.map((l) => [l.msg, l.err?.message?.split(" ")[3]])).toEqual([
      ["/status failed", "(sessions/meta:api:f)"],
      ["/stop failed", expect.stringMatching(/^\(subagents\/sa-/)],
    ]);
  });
});
