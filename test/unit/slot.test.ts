import { describe, expect, it } from "vitest";
import { createActor, setup } from "xstate";
import { createSlot } from "../../actors/slot.js";
import { createLimiter } from "../../src/limiter.js";

/** A parent that holds the slot while active and records slot.granted. */
const holder = (limiter: ReturnType<typeof createLimiter>) =>
  setup({ actors: { slot: createSlot(limiter) } }).createMachine({
    context: { granted: 0 },
    initial: "holding",
    states: {
      holding: {
        invoke: { src: "slot", input: { sessionKey: "s" } },
        on: { "slot.granted": { actions: ({ context }) => void context.granted++ } },
      },
    },
  });

const tick = () => new Promise((r) => setTimeout(r, 0));

describe("the turn slot actor", () => {
  it("says slot.granted once it holds a slot, and gives it back when stopped", async () => {
    const limiter = createLimiter(1);
    const actor = createActor(holder(limiter)).start();
    await tick();
    expect(actor.getSnapshot().context.granted).toBe(1);
    expect(limiter.active).toBe(1);
    actor.stop();
    expect(limiter.active).toBe(0);
  });

  it("stopped in the same tick it started: the slot it was given is not kept", async () => {
    const limiter = createLimiter(1);
    createActor(holder(limiter)).start().stop();
    await tick();
    expect(limiter.active).toBe(0);
    expect(limiter.tryAcquire()).toBeDefined();
  });

  it("stopped while waiting: it gives up its place in the queue, and the next waiter is served", async () => {
    const limiter = createLimiter(1);
    const first = createActor(holder(limiter)).start();
    const second = createActor(holder(limiter)).start();
    const third = createActor(holder(limiter)).start();
    await tick();
    expect(limiter.waiting).toBe(2);
    second.stop();
    await tick();
    expect(limiter.waiting).toBe(1);
    first.stop();
    await tick();
    expect(second.getSnapshot().context.granted).toBe(0);
    expect(third.getSnapshot().context.granted).toBe(1);
    third.stop();
    expect([limiter.active, limiter.waiting]).toEqual([0, 0]);
  });
});
