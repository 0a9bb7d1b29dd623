import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { memoryLine, watchProcessMemory } from "../../src/server/process-memory.js";
import { until } from "../helpers/wait.js";

/** V8's gc(), for this test only (a fresh context sees the flag once it is set). */
function fullGc(): void {
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}

describe("the daemon's memory figures (GET /api/status)", () => {
  it("gives RSS and V8's heap, and the heap after a full collection once one has run", async () => {
    const monitor = watchProcessMemory(() => 1_234);
    try {
      const first = monitor.read();
      expect(first.rss).toBeGreaterThan(0);
      expect(first.heapUsed).toBeGreaterThan(0);
      expect(first.heapUsed).toBeLessThanOrEqual(first.heapTotal);
      expect(first.heapLimit).toBeGreaterThanOrEqual(first.heapTotal);
      const before = first.fullGcs;
      // Garbage, then a full collection: the figure after it is at most what the heap held before it.
      let junk: unknown[] | undefined = Array.from({ length: 50_000 }, (_, i) => ({ i, s: `x${i}` }));
      const withJunk = monitor.read().heapUsed;
      expect(junk.length).toBe(50_000);
      junk = undefined;
      fullGc();
      const after = await until(() => { const m = monitor.read(); return m.fullGcs > before && m; }, 10_000, "a full collection observed");
      expect(after.heapUsedAfterGc).toBeGreaterThan(0);
      expect(after.heapUsedAfterGc).toBeLessThan(withJunk);
      expect(after.lastFullGcAt).toBe(1_234);
    } finally {
      monitor.stop();
    }
  });

  it("stops counting once stopped", async () => {
    const monitor = watchProcessMemory();
    monitor.stop();
    const before = monitor.read().fullGcs;
    fullGc();
    await new Promise((r) => setTimeout(r, 50));
    expect(monitor.read().fullGcs).toBe(before);
  });

  it("says it in one line for troupe daemon status", () => {
    const MB = 1024 * 1024;
    expect(memoryLine({ rss: 120 * MB, heapUsed: 48 * MB, heapTotal: 64 * MB, heapLimit: 2048 * MB, external: MB, fullGcs: 0 })).toBe("RSS 120 MB, heap 48 of 64 MB");
    expect(memoryLine({ rss: 120 * MB, heapUsed: 48 * MB, heapTotal: 64 * MB, heapLimit: 2048 * MB, external: MB, heapUsedAfterGc: 31 * MB, lastFullGcAt: 1, fullGcs: 3 })).toBe("RSS 120 MB, heap 48 of 64 MB (31 MB after the last full GC)");
  });
});
