import { CorruptRecordError } from "../errors.js";
import type { CorruptRecord, Store } from "../store/store.js";
import { CRON_FORMAT, type CronJob } from "./jobs.js";

/** Dream as a cron listing shows it, and its record when that does not read (it is listed all the same, its next run unknown). */
export interface DreamListing {
  job: CronJob;
  corrupt?: CorruptRecord;
}

/**
 * What the cron service lists for Dream when `agents.defaults.dream` is on (the daemon's, an in-process
 * agent's and `troupe cron`'s alike), read from Dream's record (its next and last run) each time.
 */
export function dreamCronJob(dream: { enabled: boolean; intervalH: number }, store: Store): (() => Promise<DreamListing>) | undefined {
  if (!dream.enabled) return undefined;
  return async () => {
    // Loaded only here: `troupe cron` does without the rest of memory.
    const { readDreamRecord } = await import("../memory/dream-record.js");
    try {
      return { job: dreamSystemJob(dream.intervalH, await readDreamRecord(store)) };
    } catch (err) {
      if (!(err instanceof CorruptRecordError) || !err.record) throw err;
      return { job: dreamSystemJob(dream.intervalH, undefined), corrupt: err.record as CorruptRecord };
    }
  };
}

/** Why `troupe cron` will not change Dream, and where it is changed instead. */
export const DREAM_REFUSALS = {
  remove: "dream is a protected system job (Dream memory consolidation) and cannot be removed; to turn Dream off, set agents.defaults.dream.enabled to false in config.json",
  enable: "dream is a system job with its own schedule: turn it on or off with agents.defaults.dream.enabled in config.json (agents.defaults.dream.intervalH sets how often it runs)",
  run: "dream is a system job, not run by cron: troupe dream run runs Dream now",
  runs: "dream is a system job and keeps no cron runs: troupe dream log shows what Dream changed",
};

/**
 * Dream as a protected system job, for `troupe cron` and the cron tool: Dream keeps its own schedule (the supervisor's
 * `dream` actor, every intervalH hours, its deadline in the Dream record), so it is shown, not stored.
 */
export function dreamSystemJob(intervalH: number, record: { nextAt: number; lastRun: { at: number } | null } | undefined): CronJob {
  return {
    v: CRON_FORMAT,
    id: "dream",
    name: "dream",
    message: "Dream memory consolidation",
    schedule: { kind: "every", everyS: Math.round(intervalH * 3600) },
    enabled: true,
    deliver: false,
    target: { channel: "api", chatId: "dream" },
    catchUp: "once",
    system: "dream",
    createdBy: null,
    createdAt: 0,
    anchor: 0,
    nextRunAt: record?.nextAt ?? null,
    lastRunAt: record?.lastRun?.at ?? null,
    lastStatus: record?.lastRun ? "ok" : null,
  };
}
