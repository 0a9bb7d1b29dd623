import { existsSync } from "node:fs";

/**
 * Fault injection for the durability tests: TROUPE_FAULT=point[:n] makes the process die abruptly
 * (SIGKILL: no cleanup, no flush) the n-th time (default 1st) it reaches the named point. Unset, it
 * costs one comparison per point.
 */
export const FAULT_POINTS = [
  // Telegram: a getUpdates answer fetched, nothing of it read (no album's rest asked for, no media downloaded) or stored yet.
  "after-updates-fetched",
  "after-inbox-write",
  "awaiting-model",
  "after-tool-started",
  "after-tool-completed",
  "during-delivery",
  // Hooks' finalizeContent: the answer checkpointed, nothing journalled; the hooks ran, their result not yet journalled; journalled, the final batch not yet written.
  "finalize-before-hooks",
  "finalize-during-hooks",
  "finalize-after-hooks",
  // A part of a multi-part message (Telegram) accepted by the platform, not yet recorded.
  "after-part-accepted",
  "before-outbox-delete",
  // A cron run recorded (synced, its inbox message with it), its turn not yet started.
  "after-cron-run-write",
  // Consolidation: the chunk summarised, its history entry not yet written; written, the session not yet told.
  "consolidate-before-append",
  "consolidate-after-append",
  // Dream: inside each phase of a run.
  "dream-analysing",
  "dream-editing",
  "dream-committing",
] as const;
export type FaultPoint = (typeof FAULT_POINTS)[number];

function parse(spec: string | undefined): { point: string; at: number } | undefined {
  if (!spec) return undefined;
  const [point = "", n] = spec.split(":");
  if (!(FAULT_POINTS as readonly string[]).includes(point)) {
    throw new Error(`TROUPE_FAULT=${spec}: unknown point ${point}; known: ${FAULT_POINTS.join(", ")}`);
  }
  const at = n === undefined ? 1 : Number.parseInt(n, 10);
  if (!Number.isInteger(at) || at < 1) throw new Error(`TROUPE_FAULT=${spec}: the count after ':' must be a whole number ≥ 1`);
  return { point, at };
}

const armed = parse(process.env.TROUPE_FAULT);
let hits = 0;

/** Whether TROUPE_FAULT names this point (code whose order a test's kill relies on keeps it then). */
export const faultArmed = (point: FaultPoint): boolean => armed?.point === point;

export function fault(point: FaultPoint): void {
  if (armed?.point !== point) return;
  if (++hits === armed.at) process.kill(process.pid, "SIGKILL");
}

/**
 * TROUPE_FAULT_DISK_FULL=<file>: while <file> exists, every write of the store fails as LevelDB's
 * does on a full disk (an IO error naming ENOSPC), and so does the probe that checks whether the disk
 * is writable again. It exercises the store's failure path where a small file system cannot be
 * mounted; the test creates the file to fill the "disk" and removes it to free it.
 */
const diskFullFlag = process.env.TROUPE_FAULT_DISK_FULL || undefined;

export function injectedDiskFull(storePath: string): Error | undefined {
  if (!diskFullFlag || !existsSync(diskFullFlag)) return undefined;
  return Object.assign(new Error(`IO error: ${storePath}/000000.log: No space left on device (injected by TROUPE_FAULT_DISK_FULL)`), { code: "LEVEL_IO_ERROR" });
}
