import { describe, expect, it } from "vitest";
import { createActor, setup, type AnyActorRef } from "xstate";
import { createSessionHost } from "../../actors/session-host.js";
import { createSlots } from "../../actors/slot.js";
import { createLimiter } from "../../src/limiter.js";
import { sessionMachine, type SessionMessage } from "../../machines/session.machine.js";

/** A parent that waits for a slot as a session does (its `waiting` state), holding it until it leaves `holding`. */
const holder = (slots: ReturnType<typeof createSlots>) =>
  setup({ actors: { slot: slots.slot }, actions: slots.actions }).createMachine({
    context: { granted: 0 },
    initial: "waiting",
    states: {
      waiting: {
        invoke: { src: "slot", input: ({ self }) => ({ sessionKey: "s", owner: self }) },
        on: { "slot.granted": { target: "holding", actions: ({ context }) => void context.granted++ } },
      },
      holding: { exit: "releaseSlot", on: { done: "finished" } },
      finished: {},
    },
  });

const tick = () => new Promise((r) => setTimeout(r, 0));
const msg = (content: string): SessionMessage => ({ id: content, channel: "test", chatId: "1", content, at: 0 });

describe("the turn slots", () => {
  it("a waiting session is told slot.granted once it holds a slot, and gives it back when it leaves the state", async () => {
    const limiter = createLimiter(1);
    const slots = createSlots(limiter);
    const actor = createActor(holder(slots)).start();
    await tick();
    expect(actor.getSnapshot().context.granted).toBe(1);
    expect([limiter.active, slots.holders()]).toEqual([1, 1]);
    actor.send({ type: "done" });
    expect([limiter.active, slots.holders()]).toEqual([0, 0]);
  });

  it("stopped in the same tick it started: the slot it was given is not kept", async () => {
    const limiter = createLimiter(1);
    const slots = createSlots(limiter);
    createActor(holder(slots)).start().stop();
    await tick();
    expect(limiter.active).toBe(0);
    expect(limiter.tryAcquire()).toBeDefined();
  });

  it("stopped while waiting: it gives up its place in the queue, and the next waiter is served", async () => {
    const limiter = createLimiter(1);
    const slots = createSlots(limiter);
    const first = createActor(holder(slots)).start();
    const second = createActor(holder(slots)).start();
    const third = createActor(holder(slots)).start();
    await tick();
    expect(limiter.waiting).toBe(2);
    second.stop();
    await tick();
    expect(limiter.waiting).toBe(1);
    first.send({ type: "done" });
    await tick();
    expect(second.getSnapshot().context.granted).toBe(0);
    expect(third.getSnapshot().context.granted).toBe(1);
    third.send({ type: "done" });
    expect([limiter.active, limiter.waiting]).toEqual([0, 0]);
  });

  /** The session machine with its slots from createSlots, run by a host; its turn never ends. */
  function sessions(max: number) {
    const limiter = createLimiter(max);
    const slots = createSlots(limiter);
    const spawned: string[] = [];
    const logic = sessionMachine.provide({
      guards: slots.guards,
      actors: {
        slot: slots.slot,
        turn: setup({}).createMachine({}) as never,
      },
      actions: {
        ...slots.actions,
        watchTurn: () => {},
        load: ({ self }) => void queueMicrotask(() => self.send({ type: "session.loaded", loaded: { queue: [], resumeTurnId: null } })),
        prepareTurn: ({ self }) => void queueMicrotask(() => self.send({ type: "turn.prepared", prepared: { start: { input: {} as never }, turnId: "t" } })),
      },
    });
    const host = createSessionHost({
      logic,
      onGone: slots.release,
      onEnd: () => {},
      follow: (actor) =>
        void actor.system.inspect((e) => {
          if (e.type === "@xstate.actor") spawned.push((e.actorRef as AnyActorRef).id);
        }),
    });
    const running = (id: string) => JSON.stringify(host.get(id)?.getSnapshot().value).includes("running");
    return { limiter, slots, host, spawned, running };
  }

  it("a session takes a free slot without an actor for it; one that finds none waits, and gets the slot a stopped session held", async () => {
    const s = sessions(1);
    s.host.start("a", { sessionKey: "a", idleMs: 60_000 });
    s.host.deliver("a", msg("hello"));
    for (let i = 0; i < 100 && !s.running("a"); i++) await tick();
    expect(s.running("a")).toBe(true);
    expect(s.spawned).not.toContain("0.session.active.waiting");
    expect([s.limiter.active, s.slots.holders()]).toEqual([1, 1]);
    s.host.start("b", { sessionKey: "b", idleMs: 60_000 });
    s.host.deliver("b", msg("hello"));
    for (let i = 0; i < 100 && s.limiter.waiting === 0; i++) await tick();
    expect(JSON.stringify(s.host.get("b")!.getSnapshot().value)).toContain("waiting");
    expect(s.spawned.filter((id) => id === "0.session.active.waiting")).toHaveLength(1);
    // Stopped mid-turn (shutdown, a restart): XState runs no exit action, the host gives the slot back.
    s.host.stop("a");
    for (let i = 0; i < 100 && !s.running("b"); i++) await tick();
    expect(s.running("b")).toBe(true);
    expect([s.limiter.active, s.limiter.waiting, s.slots.holders()]).toEqual([1, 0, 1]);
    s.host.stopAll();
    expect([s.limiter.active, s.slots.holders()]).toEqual([0, 0]);
  });
});
