import { createActor, createMachine, fromCallback } from "xstate";
import { describe, expect, it } from "vitest";
import type { SessionInput, SessionMessage } from "../../machines/session.machine.js";
import { createSessionHost } from "../../actors/session-host.js";
import { restartDelay } from "../../machines/supervision.js";
import { supervisorMachine, type SupervisorEvent } from "../../machines/supervisor.machine.js";

const msg = (content: string, id = content): SessionMessage => ({ id, channel: "test", chatId: "1", content, at: 0 });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A stand-in session: records each start and what it receives (its first message comes with its start); "crash" makes it fail. */
function fakeSessions() {
  const starts: Array<{ key: string; at: number; queue: string[]; first?: string }> = [];
  const received: string[] = [];
  const logic = fromCallback<{ type: "message"; message: SessionMessage }, SessionInput>(({ input, receive }) => {
    starts.push({ key: input.sessionKey, at: Date.now(), queue: (input.queue ?? []).map((m) => m.content), first: input.first?.content });
    const take = (message: SessionMessage) => {
      received.push(`${input.sessionKey}:${message.content}`);
      if (message.content === "crash") throw new Error("session blew up");
    };
    receive((e) => take(e.message));
    if (input.first) take(input.first);
  });
  return { starts, received, logic };
}

function start(policy = { maxRestarts: 3, windowMs: 10_000, baseDelayMs: 40, maxDelayMs: 1_000 }, storeDown = () => false) {
  const sessions = fakeSessions();
  const rejected: string[] = [];
  const failed: string[] = [];
  const restarting: Array<{ id: string; error: string; restarts: number; delayMs: number }> = [];
  const host = createSessionHost({ logic: sessions.logic, onEnd: (end) => actor.send(end) });
  const actor = createActor(
    supervisorMachine.provide({
      guards: { storeDown, ...host.provided.guards },
      actions: {
        ...host.provided.actions,
        rejectMessage: (_, p) => rejected.push(`${p.message.content} (${p.reason})`),
        childFailed: (_, p) => failed.push(`${p.id}: ${p.error}`),
        childRestarting: (_, p) => restarting.push(p),
      },
    }),
    { input: { policy, sessionIdleMs: 60_000 } },
  ).start();
  const send = (sessionKey: string, content: string) => actor.send({ type: "inbound", sessionKey, message: msg(content) } satisfies SupervisorEvent);
  return { actor, host, send, rejected, failed, restarting, ...sessions };
}

describe("supervisor", () => {
  it("spawns one session actor per key on its first message and routes later messages to it", () => {
    const s = start();
    s.send("a", "one");
    s.send("b", "two");
    s.send("a", "three");
    expect(s.starts.map((x) => x.key)).toEqual(["a", "b"]);
    expect(s.received).toEqual(["a:one", "b:two", "a:three"]);
    expect(s.host.ids().sort()).toEqual(["session:a", "session:b"]);
    s.actor.stop();
  });

  it("restarts a crashed child with exponential backoff, keeping messages that arrive meanwhile", async () => {
    const s = start();
    s.send("a", "crash");
    expect(s.actor.getSnapshot().context.children["session:a"]?.status).toBe("restarting");
    s.send("a", "while down");
    s.send("b", "unaffected");
    await sleep(60);
    expect(s.starts.filter((x) => x.key === "a")).toHaveLength(2);
    expect(s.starts.at(-1)?.queue).toEqual(["while down"]);
    const [first, second] = s.starts.filter((x) => x.key === "a");
    s.send("a", "crash");
    await sleep(120);
    const third = s.starts.filter((x) => x.key === "a")[2];
    // 40 ms after the first failure, 80 ms after the second.
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(35);
    expect(third).toBeDefined();
    expect(s.received).toContain("b:unaffected");
    expect(s.actor.getSnapshot().context.children["session:a"]?.status).toBe("running");
    s.actor.stop();
  });

  it("past the intensity limit marks the child failed, rejects its messages and keeps the rest running", async () => {
    const s = start({ maxRestarts: 2, windowMs: 10_000, baseDelayMs: 5, maxDelayMs: 20 });
    for (let i = 0; i < 3; i++) {
      s.send("a", "crash");
      await sleep(40);
    }
    const record = s.actor.getSnapshot().context.children["session:a"];
    expect(record?.status).toBe("failed");
    expect(record?.lastError).toBe("session blew up");
    expect(s.failed).toEqual(["session:a: session blew up"]);
    expect(s.starts.filter((x) => x.key === "a")).toHaveLength(3);
    s.send("a", "hello?");
    expect(s.rejected).toEqual(["hello? (session blew up)"]);
    s.send("b", "fine");
    expect(s.received.at(-1)).toBe("b:fine");
    expect(s.actor.getSnapshot().status).toBe("active");
    s.actor.stop();
  });

  it("a session that fails while the store is failing is parked, not restarted or failed, and starts again with its messages when the store recovers", async () => {
    let down = true;
    const s = start({ maxRestarts: 1, windowMs: 10_000, baseDelayMs: 5, maxDelayMs: 20 }, () => down);
    s.send("idle", "hello");
    for (let i = 0; i < 3; i++) {
      s.send("a", "crash");
      await sleep(30);
    }
    const record = s.actor.getSnapshot().context.children["session:a"];
    expect(record?.status).toBe("parked");
    expect(record?.failures).toEqual([]);
    expect(s.failed).toEqual([]);
    // Only the first start: a parked session is not restarted while the store fails.
    expect(s.starts.filter((x) => x.key === "a")).toHaveLength(1);
    s.send("a", "kept");
    expect(s.rejected).toEqual([]);

    down = false;
    s.actor.send({ type: "store.recovered" });
    const a = s.starts.filter((x) => x.key === "a");
    expect(a).toHaveLength(2);
    expect(a[1]!.queue).toEqual(["crash", "crash", "kept"]);
    expect(s.actor.getSnapshot().context.children["session:a"]?.status).toBe("running");
    s.actor.stop();
  });

  it("a session that passivates leaves: its record goes, and its next message starts a fresh actor", () => {
    const starts: string[] = [];
    const session = createMachine({
      types: {} as { input: SessionInput; context: { first: string | undefined }; events: { type: "message"; message: SessionMessage } },
      // The first message comes with the start (the input), later ones as events.
      context: ({ input }) => ({ first: input.first?.content }),
      initial: "idle",
      entry: ({ self }) => void starts.push(self.id),
      states: {
        idle: {
          always: { guard: ({ context }) => context.first === "bye", target: "passivated" },
          on: { message: { guard: ({ event }) => event.message.content === "bye", target: "passivated" } },
        },
        passivated: { type: "final" },
      },
      output: { error: null },
    });
    const host = createSessionHost({ logic: session, onEnd: (end) => actor.send(end) });
    const actor = createActor(supervisorMachine.provide({ guards: host.provided.guards, actions: host.provided.actions }), { input: { sessionIdleMs: 60_000 } }).start();
    actor.send({ type: "inbound", sessionKey: "a", message: msg("bye") });
    expect(host.size()).toBe(0);
    expect(actor.getSnapshot().context.children["session:a"]).toBeUndefined();
    actor.send({ type: "inbound", sessionKey: "a", message: msg("hello") });
    expect(starts).toEqual(["session:a", "session:a"]);
    expect(host.active("session:a")).toBe(true);
    expect(actor.getSnapshot().context.children["session:a"]?.status).toBe("running");
    actor.stop();
    host.stopAll();
  });

  it("computes the backoff: doubling from the base, capped", () => {
    const p = { maxRestarts: 5, windowMs: 60_000, baseDelayMs: 500, maxDelayMs: 3_000 };
    expect([1, 2, 3, 4, 5].map((n) => restartDelay(p, n))).toEqual([500, 1_000, 2_000, 3_000, 3_000]);
  });

  it("says each restart (for the log): which child, why, the how-many-th, after what backoff", async () => {
    const s = start();
    s.send("a", "crash");
    await sleep(60);
    s.send("a", "crash");
    expect(s.restarting).toEqual([
      { id: "session:a", error: "session blew up", restarts: 1, delayMs: 40 },
      { id: "session:a", error: "session blew up", restarts: 2, delayMs: 80 },
    ]);
    s.actor.stop();
  });
});
