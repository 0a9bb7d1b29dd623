import { assign, createActor, fromPromise, setup } from "xstate";
import { describe, expect, it } from "vitest";
import { createBus, type BusEvent } from "../../src/bus/index.js";
import { SUPERSEDED } from "../../src/server/actor-state.js";
import { createActorTree } from "../../src/server/actor-tree.js";
import { createEventLog } from "../../src/server/event-log.js";
import { catchingUncaught } from "../helpers/uncaught.js";

const SECRET = "sk-tree-secret-0123456789";
type StateEvent = Extract<BusEvent, { type: "actor_state" }>;

/** A machine that walks through three states, its context changing (and holding a secret) on the way. */
const walker = setup({ types: { context: {} as { step: number; note: string }, events: {} as { type: "go" } } }).createMachine({
  id: "walker",
  context: { step: 0, note: `key ${SECRET}` },
  initial: "one",
  states: {
    one: { on: { go: { target: "two", actions: assign({ step: 1 }) } } },
    two: { on: { go: { target: "three", actions: assign({ step: 2 }) } } },
    three: { type: "final" },
  },
});

function run(read: "live" | "later") {
  const bus = createBus();
  const log = createEventLog(bus);
  const tree = createActorTree(bus, { secrets: [SECRET] });
  const live: unknown[] = [];
  // An SSE client reads each event as it is published.
  if (read === "live") bus.ofType("actor_state").subscribe((e) => live.push(JSON.parse(JSON.stringify(e))));
  // An /api/events client watches from the start.
  tree.watch();
  const actor = createActor(walker);
  tree.follow(actor);
  actor.start();
  actor.send({ type: "go" });
  return { actor, log, tree, live };
}

describe("actor tree: snapshots made when read", () => {
  it("an SSE client reading as events come gets every state's snapshot, redacted", () => {
    const { live } = run("live");
    const states = live as StateEvent[];
    expect(states.map((e) => e.state)).toEqual(["one", "two"]);
    expect(states.map((e) => (e.snapshot?.context as { step: number }).step)).toEqual([0, 1]);
    expect(JSON.stringify(states)).not.toContain(SECRET);
    expect((states[0]!.snapshot?.context as { note: string }).note).toBe("key [REDACTED]");
  });

  it("unread, a state's snapshot is not kept once a later state replaces it; the latest is made when read, redacted", () => {
    const { log, actor } = run("later");
    const [one, two] = log.since(60_000).filter((e): e is StateEvent => e.type === "actor_state");
    expect(one!.snapshot).toEqual({ status: "active", context: SUPERSEDED });
    expect(two!.snapshot).toEqual({ status: "active", context: { step: 1, note: "key [REDACTED]" } });
    // Read once, it stays what it was (the same object).
    expect(two!.snapshot).toBe(two!.snapshot);
    // The actor's last snapshot is made when it stops (its context is not held on to), and replays as any other.
    actor.send({ type: "go" });
    const three = log.since(60_000).find((e): e is StateEvent => e.type === "actor_state" && e.state === "three")!;
    expect(Object.getOwnPropertyDescriptor(three, "snapshot")?.get).toBeUndefined();
    expect({ ...three, replayed: true }.snapshot).toEqual({ status: "done", context: { step: 2, note: "key [REDACTED]" } });
  });
});

describe("actor tree: effects", () => {
  it("an effect (not a machine) is spawned active: no starting → active change is published for it", async () => {
    const bus = createBus();
    const log = createEventLog(bus);
    const tree = createActorTree(bus);
    let finish!: () => void;
    const parent = setup({ actors: { work: fromPromise(() => new Promise<void>((r) => (finish = r))) } }).createMachine({
      id: "parent",
      initial: "busy",
      states: { busy: { invoke: { id: "work", src: "work", onDone: "idle" } }, idle: {} },
    });
    tree.watch();
    const actor = createActor(parent);
    tree.follow(actor);
    actor.start();
    const effect = tree.tree()!.children[0]!;
    expect(effect).toMatchObject({ id: "work", machine: null, state: "active" });
    finish();
    await new Promise((r) => setTimeout(r, 0));
    const events = log.since(60_000).filter((e) => e.type !== "actor_gap" && e.actorId === "work");
    expect(events.map((e) => [e.type, e.type !== "actor_gap" && e.state])).toEqual([
      ["actor_spawned", "active"],
      ["actor_stopped", "active"],
    ]);
    expect(tree.tree()!.state).toBe("idle");
    actor.stop();
  });
});

describe("actor tree: inspection only while someone watches", () => {
  /** Idle until told to go; busy while its effect (a promise it is handed the resolver of) runs. */
  function worker() {
    const finish: Array<() => void> = [];
    const machine = setup({ types: { events: {} as { type: "go" } }, actors: { work: fromPromise(() => new Promise<void>((r) => finish.push(r))) } }).createMachine({
      id: "worker",
      initial: "idle",
      states: { idle: { on: { go: "busy" } }, busy: { invoke: { id: "work", src: "work", onDone: "idle" } } },
    });
    return { machine, finish: () => finish.shift()!() };
  }
  const settle = () => new Promise((r) => setTimeout(r, 0));

  function setupTree() {
    let t = 1_000;
    const bus = createBus();
    const log = createEventLog(bus, { now: () => t });
    const tree = createActorTree(bus, { now: () => t });
    const published: BusEvent[] = [];
    bus.events$.subscribe((e) => published.push(e));
    return { bus, log, tree, published, clock: { set: (ms: number) => (t = ms) } };
  }

  it("with nobody watching, XState reports nothing and nothing is published, yet the tree (states, since, effects, other systems) is true", async () => {
    const { tree, published, clock } = setupTree();
    const w = worker();
    const root = createActor(w.machine);
    tree.follow(root);
    root.start();
    clock.set(2_000);
    const session = createActor(w.machine, { id: "session:a" });
    tree.follow(session, "session:a", "supervisor");
    session.start();
    expect(tree.tree()).toMatchObject({ id: "supervisor", state: "idle", since: 1_000, children: [{ id: "session:a", kind: "session", state: "idle", since: 2_000, children: [] }] });
    clock.set(3_000);
    session.send({ type: "go" });
    expect(tree.tree()!.children[0]).toMatchObject({ state: "busy", since: 3_000, children: [{ id: "session:a/work", kind: "effect", machine: null, state: "active", since: 3_000 }] });
    clock.set(4_000);
    w.finish();
    await settle();
    expect(tree.tree()!.children[0]).toMatchObject({ state: "idle", since: 4_000, children: [] });
    // A system that ends leaves the tree.
    session.stop();
    expect(tree.tree()!.children).toEqual([]);
    expect(tree.stats.inspectionEvents).toBe(0);
    expect(published).toEqual([]);
    root.stop();
    expect(tree.tree()).toBeUndefined();
  });

  it("a watcher that connects mid-turn sees the tree as it is, then every change; when it leaves inspection stops, and the next one is told what nobody watched", async () => {
    const { tree, log, clock } = setupTree();
    const w = worker();
    const root = createActor(w.machine);
    tree.follow(root);
    root.start();
    clock.set(2_000);
    root.send({ type: "go" });
    clock.set(5_000);
    const release = tree.watch();
    expect(log.since(60_000)).toEqual([{ type: "actor_gap", from: 1_000, at: 5_000 }]);
    expect(tree.tree()).toMatchObject({ state: "busy", since: 2_000, children: [{ id: "work", state: "active", since: 2_000 }] });
    clock.set(6_000);
    w.finish();
    await settle();
    const seen = log.since(60_000).slice(1).map((e) => (e.type === "actor_gap" ? [e.type] : [e.type, e.actorId, e.state, e.type === "actor_state" ? e.event : undefined]));
    expect(seen).toEqual([
      ["actor_event", "supervisor", "busy", undefined],
      ["actor_state", "supervisor", "idle", "xstate.done.actor.work"],
      ["actor_stopped", "work", "active", undefined],
    ]);
    // A session started while watched is announced, and so is its effect.
    const session = createActor(w.machine, { id: "session:b" });
    tree.follow(session, "session:b", "supervisor");
    session.start();
    session.send({ type: "go" });
    expect(log.since(60_000).filter((e) => e.type === "actor_spawned").map((e) => e.type === "actor_spawned" && e.actorId)).toEqual(["session:b", "session:b/work"]);
    const reported = tree.stats.inspectionEvents;
    expect(reported).toBeGreaterThan(0);
    clock.set(7_000);
    release();
    release();
    const before = log.since(60_000).length;
    w.finish();
    await settle();
    session.send({ type: "go" });
    expect(tree.stats.inspectionEvents).toBe(reported);
    expect(log.since(60_000)).toHaveLength(before);
    // Still true, unwatched.
    expect(tree.tree()!.children[0]).toMatchObject({ id: "session:b", state: "busy", since: 7_000, children: [{ id: "session:b/work" }] });
    clock.set(9_000);
    tree.watch();
    expect(log.since(60_000).at(-1)).toEqual({ type: "actor_gap", from: 7_000, at: 9_000 });
    w.finish();
    await settle();
    expect(log.since(60_000).slice(-2)).toMatchObject([
      { type: "actor_state", actorId: "session:b", from: "busy", state: "idle" },
      { type: "actor_stopped", actorId: "session:b/work" },
    ]);
    session.stop();
    root.stop();
  });

  it("a system of its own (a subagent's turn) hangs under the actor it attaches to, unwatched, and leaves the tree when it ends", () => {
    const { tree } = setupTree();
    const w = worker();
    const root = createActor(w.machine);
    tree.follow(root);
    root.start();
    const session = createActor(w.machine, { id: "session:a" });
    tree.follow(session, "session:a", "supervisor");
    session.start();
    const sub = createActor(walker);
    tree.follow(sub, "subagent:sa-1", "session:a");
    sub.start();
    expect(tree.tree()!.children[0]).toMatchObject({ id: "session:a", children: [{ id: "subagent:sa-1", kind: "subagent", machine: "walker", state: "one" }] });
    // Its session gone, it hangs under the supervisor.
    session.stop();
    expect(tree.tree()!.children).toMatchObject([{ id: "subagent:sa-1" }]);
    sub.send({ type: "go" });
    sub.send({ type: "go" });
    expect(tree.tree()!.children).toEqual([]);
    root.stop();
  });

  it("two watchers: inspection stays until the last leaves", () => {
    const { tree, clock } = setupTree();
    const w = worker();
    const root = createActor(w.machine);
    tree.follow(root);
    root.start();
    const a = tree.watch();
    const b = tree.watch();
    a();
    clock.set(2_000);
    root.send({ type: "go" });
    const reported = tree.stats.inspectionEvents;
    expect(reported).toBeGreaterThan(0);
    expect(tree.watching()).toBe(1);
    b();
    root.send({ type: "go" });
    expect(tree.stats.inspectionEvents).toBe(reported);
    root.stop();
  });

  it("leaves a child machine's failure to its parent: following it throws nothing at the process (the supervisor restarts a failed child)", async () => {
    const child = setup({
      actions: {
        explode: () => {
          throw new Error("child failed");
        },
      },
    }).createMachine({ id: "child", initial: "up", states: { up: { on: { boom: { actions: "explode" } } } } });
    const parent = setup({ actors: { child } }).createMachine({
      id: "parent",
      initial: "running",
      states: { running: { invoke: { id: "c", src: "child", onError: "recovered" } }, recovered: {} },
    });
    // XState rethrows an unhandled actor error from a timer: catch what reaches the process.
    await catchingUncaught(async (uncaught) => {
      const tree = createActorTree(createBus());
      const actor = createActor(parent);
      tree.follow(actor);
      actor.start();
      expect(tree.tree()?.children.map((c) => c.id)).toEqual(["c"]);
      actor.getSnapshot().children.c!.send({ type: "boom" });
      expect(actor.getSnapshot().value).toBe("recovered");
      await new Promise((r) => setTimeout(r, 50));
      expect(uncaught).toEqual([]);
      expect(tree.tree()?.children).toEqual([]);
    });
  });
});
