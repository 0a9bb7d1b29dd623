import { constants, PerformanceObserver, type PerformanceEntry } from "node:perf_hooks";
import { getHeapStatistics } from "node:v8";

/** What GET /api/status says of the daemon's memory, in bytes. */
export interface ProcessMemory {
  rss: number;
  /** V8's heap: live objects plus garbage not yet collected. */
  heapUsed: number;
  heapTotal: number;
  /** How far V8 lets the heap grow before it fails. */
  heapLimit: number;
  /** Memory held outside V8's heap by JavaScript objects (Buffers, ArrayBuffers). */
  external: number;
  /**
   * The heap just after the last full (mark-sweep) collection: what is live, without the garbage
   * heapUsed also counts. A heap that grows between full collections is not a leak; this one growing is.
   * Absent until the first full collection.
   */
  heapUsedAfterGc?: number;
  /** When that collection ended (ms since the epoch), and how many there were since start. */
  lastFullGcAt?: number;
  fullGcs: number;
}

export interface ProcessMemoryMonitor {
  read(): ProcessMemory;
  stop(): void;
}

/**
 * Watches V8's full collections (PerformanceObserver "gc" entries of kind major) and reads the heap's
 * size when one is reported, so heapUsedAfterGc is there without forcing a collection. The entry is
 * delivered shortly after the collection, so a little of what was allocated since may be counted.
 */
export function watchProcessMemory(now: () => number = Date.now): ProcessMemoryMonitor {
  let afterGc: number | undefined;
  let lastFullGcAt: number | undefined;
  let fullGcs = 0;
  const observer = new PerformanceObserver((list) => {
    const major = list.getEntries().some(isMajor);
    if (!major) return;
    fullGcs += list.getEntries().filter(isMajor).length;
    afterGc = getHeapStatistics().used_heap_size;
    lastFullGcAt = now();
  });
  observer.observe({ entryTypes: ["gc"] });
  return {
    read() {
      const usage = process.memoryUsage();
      return {
        rss: usage.rss,
        heapUsed: usage.heapUsed,
        heapTotal: usage.heapTotal,
        heapLimit: getHeapStatistics().heap_size_limit,
        external: usage.external,
        ...(afterGc === undefined ? {} : { heapUsedAfterGc: afterGc, lastFullGcAt }),
        fullGcs,
      };
    },
    stop: () => observer.disconnect(),
  };
}

const isMajor = (e: PerformanceEntry) => (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR;

/** One line for `troupe daemon status`: "RSS 120 MB, heap 48 of 64 MB (31 MB after the last full GC)". */
export function memoryLine(m: ProcessMemory): string {
  const mb = (n: number) => `${Math.round(n / (1024 * 1024))} MB`;
  const after = m.heapUsedAfterGc === undefined ? "" : ` (${mb(m.heapUsedAfterGc)} after the last full GC)`;
  return `RSS ${mb(m.rss)}, heap ${mb(m.heapUsed).replace(" MB", "")} of ${mb(m.heapTotal)}${after}`;
}
