import { describe, expect, it } from "vitest";
import { createTimedCache } from "../../src/context/prompt-cache.js";

/** Builds whose completion the test decides: `finish(i)` resolves the i-th build with "v<i>". */
function builds() {
  const pending: Array<{ resolve: (v: string) => void; reject: (e: Error) => void }> = [];
  return {
    build: () => new Promise<string>((resolve, reject) => pending.push({ resolve, reject })),
    count: () => pending.length,
    finish: (i: number) => pending[i]!.resolve(`v${i}`),
    fail: (i: number) => pending[i]!.reject(new Error(`build ${i} failed`)),
  };
}

/** Whether a promise has settled (after the microtasks queued so far). */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true), () => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
}

/** A cache of 2 s TTL on a clock the test sets (`at`), its first value ("v0") built at 0. */
async function warmCache() {
  const clock = { now: 0 };
  const b = builds();
  const cache = createTimedCache(b.build, { ttlMs: 2_000, now: () => clock.now });
  const first = cache.get();
  b.finish(0);
  expect(await first).toBe("v0");
  return { b, cache, at: (ms: number) => void (clock.now = ms) };
}

describe("a value rebuilt at most every TTL (the system prompt)", () => {
  it("reuses the value within the TTL and never hands out one older than it", async () => {
    const { b, cache, at } = await warmCache();
    at(900);
    expect(await cache.get()).toBe("v0");
    expect(b.count()).toBe(1);
    at(2_000);
    const late = cache.get();
    expect(b.count()).toBe(2);
    expect(await settled(late)).toBe(false);
    b.finish(1);
    expect(await late).toBe("v1");
  });

  it("from half the TTL a request gets the current value at once and starts one rebuild, which the next requests get once built", async () => {
    const { b, cache, at } = await warmCache();
    at(1_000);
    const during = cache.get();
    expect(await settled(during)).toBe(true);
    expect(await during).toBe("v0");
    expect(cache.get()).toBe(during);
    expect(b.count()).toBe(2);
    b.finish(1);
    await new Promise((r) => setImmediate(r));
    expect(await cache.get()).toBe("v1");
    // The rebuilt value's age counts from its build's start (1,000): past the first value's TTL, no request waits.
    at(2_900);
    expect(await settled(cache.get())).toBe(true);
    expect(await cache.get()).toBe("v1");
  });

  it("past the TTL a request waits for the rebuild under way rather than starting another", async () => {
    const { b, cache, at } = await warmCache();
    at(1_500);
    await cache.get();
    at(2_100);
    const late = cache.get();
    expect(b.count()).toBe(2);
    expect(await settled(late)).toBe(false);
    b.finish(1);
    expect(await late).toBe("v1");
  });

  it("invalidate makes the next request build afresh; a rebuild started before it is dropped", async () => {
    const { b, cache, at } = await warmCache();
    at(1_200);
    await cache.get();
    expect(b.count()).toBe(2);
    cache.invalidate();
    const fresh = cache.get();
    expect(b.count()).toBe(3);
    b.finish(1);
    await new Promise((r) => setImmediate(r));
    b.finish(2);
    expect(await fresh).toBe("v2");
    expect(await cache.get()).toBe("v2");
  });

  it("a failed build is not kept", async () => {
    let now = 0;
    const b = builds();
    const cache = createTimedCache(b.build, { ttlMs: 2_000, now: () => now });
    const first = cache.get();
    b.fail(0);
    await expect(first).rejects.toThrow("build 0 failed");
    const again = cache.get();
    expect(b.count()).toBe(2);
    b.finish(1);
    expect(await again).toBe("v1");
    now = 1_000;
    await cache.get();
    b.fail(2);
    await new Promise((r) => setImmediate(r));
    // The failed background rebuild leaves the current value; the next request past half the TTL tries again.
    expect(await cache.get()).toBe("v1");
    expect(b.count()).toBe(4);
  });
});
