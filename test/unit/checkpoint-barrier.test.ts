import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { createCheckpointBarrier } from "../../src/store/checkpoint-barrier.js";

describe("checkpoint barrier", () => {
  it("lets a wait through once its checkpoint (or a later one) is durable, the others still wait", async () => {
    const barrier = createCheckpointBarrier();
    const done: number[] = [];
    const two = barrier.reached("t", 2).then(() => done.push(2));
    const four = barrier.reached("t", 4).then(() => done.push(4));
    barrier.mark("t", 1);
    await Promise.resolve();
    expect(done).toEqual([]);
    barrier.mark("t", 3);
    await two;
    expect(done).toEqual([2]);
    barrier.mark("t", 4);
    await four;
    expect(done).toEqual([2, 4]);
    // Already durable: at once.
    await barrier.reached("t", 4);
  });

  it("an aborted wait never lets its effect through: rejected with the signal's reason when its checkpoint arrives; no listener on the turn's signal", async () => {
    const barrier = createCheckpointBarrier();
    const turn = new AbortController();
    const waits = [barrier.reached("t", 1, turn.signal), barrier.reached("t", 2, turn.signal)];
    expect(getEventListeners(turn.signal, "abort")).toHaveLength(0);
    barrier.mark("t", 2);
    await Promise.all(waits);
    const stopped = new AbortController();
    let through = false;
    const wait = barrier.reached("t", 9, stopped.signal).then(() => (through = true));
    stopped.abort(new Error("turn stopped"));
    barrier.mark("t", 9);
    await expect(wait).rejects.toThrow("turn stopped");
    expect(through).toBe(false);
    // Already aborted: refused at once, even when its checkpoint is durable.
    await expect(barrier.reached("t", 9, stopped.signal)).rejects.toThrow("turn stopped");
  });

  it("a wait still pending when its turn is forgotten is dropped: a later mark of a new turn with the same id does not let it through", async () => {
    const barrier = createCheckpointBarrier();
    let through = false;
    void barrier.reached("t", 3).then(() => (through = true));
    barrier.forget("t");
    barrier.mark("t", 5);
    await new Promise((resolve) => setImmediate(resolve));
    expect(through).toBe(false);
  });
});
