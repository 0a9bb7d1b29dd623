import { describe, expect, it } from "vitest";
import { createLimiter } from "../../src/limiter.js";

describe("turn limiter", () => {
  it("never lets more than max hold a slot, and serves waiters first come, first served", async () => {
    const limiter = createLimiter(2);
    const granted: string[] = [];
    const take = (name: string) => limiter.acquire().then((release) => (granted.push(name), release));
    const a = await take("a");
    const b = await take("b");
    const waiting = ["c", "d", "e"].map(take);
    await Promise.resolve();
    expect(granted).toEqual(["a", "b"]);
    expect([limiter.active, limiter.waiting]).toEqual([2, 3]);
    b();
    const d0 = await waiting[0]!;
    a();
    a(); // a second release of the same slot changes nothing
    const d1 = await waiting[1]!;
    expect(granted).toEqual(["a", "b", "c", "d"]);
    expect([limiter.active, limiter.waiting]).toEqual([2, 1]);
    d0();
    await waiting[2];
    d1();
    expect(granted).toEqual(["a", "b", "c", "d", "e"]);
  });

  it("gives up a waiter's place when its signal aborts", async () => {
    const limiter = createLimiter(1);
    const first = await limiter.acquire();
    const giveUp = new AbortController();
    const abandoned = limiter.acquire(giveUp.signal);
    const next = limiter.acquire();
    giveUp.abort(new Error("stopped"));
    await expect(abandoned).rejects.toThrow("stopped");
    first();
    await next;
    expect([limiter.active, limiter.waiting]).toEqual([1, 0]);
  });
});
