import { assign, createActor, fromPromise, setup } from "xstate";
import { describe, expect, it } from "vitest";
import { createBus, type BusEvent } from "../../src/bus/index.js";
import { createActorTree, SUPERSEDED } from "../../src/server/actor-tree.js";
import { createEventLog } from "../../src/server/event-log.js";

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
