import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ActorNode } from "../../src/server/actor-view.js";
import { startControlServer } from "../../src/server/http.js";
import { readSse, type SseMessage } from "../../src/server/sse.js";
import type { BusEvent } from "../../src/bus/events.js";
import type { Daemon } from "../../src/daemon-types.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { startSubagentModel } from "../fixtures/subagent-model.js";
import { replyTo, sendApi, startDaemon } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";

type ActorBusEvent = Extract<BusEvent, { type: "actor_spawned" | "actor_stopped" | "actor_state" | "actor_event" }>;

/** The events an /api/events client would get: it watches, so the actors' changes are published. */
const collect = (d: Daemon) => {
  const events: ActorBusEvent[] = [];
  d.tree.watch();
  d.bus.ofType("actor_spawned", "actor_stopped", "actor_state", "actor_event").subscribe((e) => events.push(e));
  return events;
};

const SECRET = "sk-inspect-secret-0123456789";

describe("actor ids and the event stream", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let daemon: Daemon | undefined;
  closeAfterEach(() => [daemon, fake]);

  it("a turn is turn:<session>:<turnId> under its session, and every state change of it is on the stream, redacted", async () => {
    fake = await startFakeOpenAi([{ toolCalls: [{ name: "list_dir", arguments: {} }] }, { content: "done" }]);
    const home = await tmp();
    daemon = await startDaemon(home, fake.url, { config: { providers: { custom: { apiBase: fake.url, apiKey: SECRET } } } });
    const events = collect(daemon);
    const id = await sendApi(daemon, "x", `my key is ${SECRET} and ${"long ".repeat(400)}`);
    await replyTo(daemon, id);
    const spawned = await until(() => events.find((e) => e.type === "actor_spawned" && e.kind === "turn"), 20_000, "the turn actor");
    expect(spawned.actorId).toMatch(/^turn:api:x:\S+$/);
    expect(spawned.parentId).toBe("session:api:x");
    expect(spawned.machine).toBe("turn");
    const states = await until(() => {
      const s = events.filter((e) => e.type === "actor_state" && e.actorId === spawned.actorId).map((e) => e.state);
      return s.includes("responded") && s;
    });
    expect(states).toEqual(["awaiting_model", "awaiting_tools", "tools_completed", "awaiting_model", "responded"]);
    const change = events.find((e) => e.type === "actor_state" && e.actorId === spawned.actorId && e.state === "awaiting_tools");
    expect(change).toMatchObject({ from: "awaiting_model", event: expect.stringContaining("xstate.done.actor") });
    // Snapshots: nothing secret, long contents cut.
    const text = JSON.stringify(events);
    expect(text).not.toContain(SECRET);
    expect(text).toContain("[REDACTED]");
    expect(text).not.toContain("long ".repeat(100));
    // Effects are named under their actor; the session's changes are there too.
    expect(events.some((e) => e.type === "actor_spawned" && e.actorId === `${spawned.actorId}/callModel`)).toBe(true);
    expect(events.some((e) => e.type === "actor_state" && e.actorId === "session:api:x" && e.state === "active.running")).toBe(true);
    await until(() => events.some((e) => e.type === "actor_stopped" && e.actorId === spawned.actorId), 20_000, "the turn stopped");
    // A new session's first message comes with its start; a later one is an event the session receives.
    expect(events.some((e) => e.type === "actor_event" && e.actorId === "session:api:x" && e.event === "message")).toBe(false);
    await replyTo(daemon, await sendApi(daemon, "x", "again"));
    await until(() => events.some((e) => e.type === "actor_event" && e.actorId === "session:api:x" && e.event === "message"), 20_000, "the second message's event");
  });

  it("a subagent is subagent:<id> under the session that spawned it", async () => {
    const model = await startSubagentModel({ subagentMs: 400 });
    fake = model.fake;
    daemon = await startDaemon(await tmp(), fake.url);
    const events = collect(daemon);
    await sendApi(daemon, "s", "spawn 1");
    const sub = await until(() => events.find((e) => e.type === "actor_spawned" && e.kind === "subagent"), 20_000, "a subagent actor");
    expect(sub.actorId).toMatch(/^subagent:sa-[0-9a-f]{10}$/);
    expect(sub.machine).toBe("turn");
    const inTree = await until(() => daemon!.tree.tree()?.children.find((c) => c.id === "session:api:s")?.children.find((c) => c.id === sub.actorId));
    expect(inTree.kind).toBe("subagent");
    await until(() => events.some((e) => e.type === "actor_state" && e.actorId === sub.actorId && e.state === "responded"), 20_000, "the subagent responded");
    // Its story in the log: spawned, finished.
    const id = sub.actorId.slice("subagent:".length);
    const log = join(daemon.loaded.paths.logsDir, "troupe.log");
    const lines = await until(async () => {
      const entries = (await readFile(log, "utf8")).split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
      return entries.some((e) => e.msg === "subagent finished") && entries.filter((e) => e.subagent === id);
    }, 20_000, "the subagent's log lines");
    expect(lines.map((e) => e.msg)).toEqual(["subagent spawned", "subagent finished"]);
    expect(lines[0]).toMatchObject({ sessionKey: "api:s", label: "job 1", queued: false });
    expect(lines[1]).toMatchObject({ sessionKey: "api:s", status: "responded", durationMs: expect.any(Number) });
  });

  it("a restarted actor shows its restart count in /api/actors, and its restart is logged", async () => {
    fake = await startFakeOpenAi([], (req) =>
      req.body.messages.some((m) => m.role === "tool") ? { content: "finished" } : { toolCalls: [{ name: "list_dir", arguments: {} }] },
    );
    daemon = await startDaemon(await tmp(), fake.url, {}, { policy: { baseDelayMs: 20 } });
    // One checkpoint cannot be written: the session crashes, the supervisor restarts it, the turn resumes.
    const batch = daemon.store.batch.bind(daemon.store);
    let failures = 0;
    daemon.store.batch = async (ops, opts) => {
      // tools_completed's checkpoint shares the next one's batch (its journal entry rides there).
      const cp = ops.find((op) => op.type === "put" && op.sublevel === "journal" && (op.value as { kind?: string }).kind === "state") as { value: { state: string } } | undefined;
      if (cp?.value.state === "tools_completed" && failures++ === 0) throw new Error("IO error: No space left on device");
      return batch(ops, opts);
    };
    const server = await startControlServer(daemon, { host: "127.0.0.1", port: 0, token: "t0ken-for-the-test" });
    try {
      const id = await sendApi(daemon, "cp", "list the workspace");
      expect((await replyTo(daemon, id)).content).toBe("finished");
      const res = await fetch(`${server.url}/api/actors`, { headers: { authorization: "Bearer t0ken-for-the-test" } });
      const { root } = (await res.json()) as { root: ActorNode };
      expect(root.children.find((c) => c.id === "session:api:cp")?.restarts).toBe(1);
      const log = join(daemon.loaded.paths.logsDir, "troupe.log");
      const restart = await until(async () =>
        (await readFile(log, "utf8"))
          .split("\n")
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Record<string, unknown>)
          .find((e) => e.msg === "actor failed; restarting"),
      );
      expect(restart).toMatchObject({ actor: "session:api:cp", restarts: 1, delayMs: 20, error: expect.stringContaining("No space left on device") });
    } finally {
      await server.close();
    }
  });

  it("nobody watching, the daemon inspects nothing and publishes no actor event, yet /api/actors is true; an /api/events client connecting later gets the gap, the tree, then every change, and inspection stops when it leaves", async () => {
    fake = await startFakeOpenAi([], (req) =>
      req.body.messages.some((m) => m.role === "tool") ? { content: "finished" } : { toolCalls: [{ name: "list_dir", arguments: {} }] },
    );
    daemon = await startDaemon(await tmp(), fake.url);
    const d = daemon;
    const published: BusEvent[] = [];
    d.bus.ofType("actor_spawned", "actor_stopped", "actor_state", "actor_event", "actor_gap").subscribe((e) => published.push(e));
    const startedAt = Date.now();
    const server = await startControlServer(d, { host: "127.0.0.1", port: 0, token: "t0ken-for-the-test" });
    const auth = { authorization: "Bearer t0ken-for-the-test" };
    const watcher = new AbortController();
    try {
      expect((await replyTo(d, await sendApi(d, "w", "list the workspace"))).content).toBe("finished");
      expect(d.tree.stats.inspectionEvents).toBe(0);
      expect(published).toEqual([]);
      // The tree, read by walking nothing but what the tree followed: the session, idle since its turn ended.
      const { root } = (await (await fetch(`${server.url}/api/actors`, { headers: auth })).json()) as { root: ActorNode };
      const session = await until(() => root.children.find((c) => c.id === "session:api:w" && c.state === "idle"), 20_000, "the idle session");
      expect(session.since).toBeGreaterThanOrEqual(startedAt);
      expect(root.children.map((c) => c.id)).toEqual(expect.arrayContaining(["channel:api", "cron", "dream"]));

      const res = await fetch(`${server.url}/api/events?since=30`, { headers: auth, signal: watcher.signal });
      const messages: SseMessage[] = [];
      void (async () => {
        for await (const m of readSse(res.body!)) messages.push(m);
      })().catch(() => undefined);
      await until(() => messages.some((m) => m.event === "tree"), 20_000, "the tree");
      // The replay: the time nobody watched, then the tree as it is.
      expect(messages.map((m) => m.event).slice(0, 2)).toEqual(["actor_gap", "tree"]);
      expect(messages[0]!.data).toMatchObject({ from: expect.any(Number), at: expect.any(Number), replayed: true });
      expect((messages[1]!.data as ActorNode).children.find((c) => c.id === "session:api:w")).toMatchObject({ state: "idle", since: session.since });
      expect(d.tree.watching()).toBe(1);
      await replyTo(d, await sendApi(d, "w", "again"));
      const states = await until(() => {
        const s = messages.filter((m) => m.event === "actor_state" && (m.data as { actorId: string }).actorId === "session:api:w").map((m) => (m.data as { state: string }).state);
        return s.at(-1) === "idle" && s;
      }, 20_000, "the session's states, live");
      expect(states).toContain("active.running");
      expect(messages.some((m) => m.event === "actor_spawned" && (m.data as { kind: string }).kind === "turn")).toBe(true);
      watcher.abort();
      await until(() => d.tree.watching() === 0, 20_000, "the watcher gone");
      const reported = d.tree.stats.inspectionEvents;
      const count = published.length;
      await replyTo(d, await sendApi(d, "w", "once more"));
      expect([d.tree.stats.inspectionEvents, published.length]).toEqual([reported, count]);
    } finally {
      watcher.abort();
      await server.close();
    }
  });
});
