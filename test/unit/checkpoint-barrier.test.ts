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

  it("an aborted wait is rejected with the signal's reason; a wait let through leaves no listener on the turn's signal", async () => {
    const barrier = createCheckpointBarrier();
    const turn = new AbortController();
    const waits = [barrier.reached("t", 1, turn.signal), barrier.reached("t", 2, turn.signal)];
    expect(getEventListeners(turn.signal, "abort")).toHaveLength(2);
    barrier.mark("t", 2);
    await Promise.all(waits);
    expect(getEventListeners(turn.signal, "abort")).toHaveLength(0);
    const stopped = new AbortController();
    const wait = barrier.reached("t", 9, stopped.signal);
    stopped.abort(new Error("turn stopped"));
    await expect(wait).rejects.toThrow("turn stopped");
    // It no longer waits: a later mark has nobody to let through.
    barrier.mark("t", 9);
  });
});
