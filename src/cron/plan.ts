import { CATCH_UP_ALL_LIMIT, type CronJob } from "./jobs.js";
import { instantsBetween, nextInstant } from "./schedule.js";

/** An instant fired this late (or while the daemon was down) was missed: the job's catchUp policy decides. */
export const MISSED_AFTER_MS = 60_000;
/** Instants listed one by one when a job is this far behind; the rest are counted. */
const MAX_LISTED = 1_000;

export interface FiringPlan {
  /** Instants to run now, each with the number of missed instants it stands for. */
  run: Array<{ scheduledAt: number; missed: number }>;
  /** Missed instants not run (catchUp "skip", or past the "all" limit), recorded as skipped. */
  skipped: number[];
  /** Missed instants beyond MAX_LISTED, counted only. */
  uncounted: number;
  /** The job's next instant after now (null: none, an `at` job that is done). */
  nextRunAt: number | null;
}

/**
 * What a due job does now (pure: the clock is passed in). The due instants are those from the job's
 * next run up to now; an instant is missed when it came before the daemon started or more than
 * MISSED_AFTER_MS ago. "once" runs the latest instant for all of them; "skip" runs only an instant
 * that is on time; "all" runs up to CATCH_UP_ALL_LIMIT of them, the latest ones.
 */
export function planFiring(job: CronJob, now: number, startedAt: number): FiringPlan {
  const idle: FiringPlan = { run: [], skipped: [], uncounted: 0, nextRunAt: job.nextRunAt };
  if (!job.enabled || job.nextRunAt === null || job.nextRunAt > now) return idle;
  const { instants, more } = instantsBetween(job.schedule, job.nextRunAt - 1, now, job.anchor, MAX_LISTED);
  const nextRunAt = nextInstant(job.schedule, now, job.anchor);
  if (instants.length === 0) return { ...idle, nextRunAt };
  const missed = (t: number) => t < startedAt || now - t > MISSED_AFTER_MS;
  const latest = instants[instants.length - 1]!;
  const total = instants.length + more;
  switch (job.catchUp) {
    case "once":
      return { run: [{ scheduledAt: latest, missed: total - 1 }], skipped: [], uncounted: 0, nextRunAt };
    case "skip": {
      const onTime = instants.filter((t) => !missed(t));
      const run = onTime.length ? onTime[onTime.length - 1]! : undefined;
      return {
        run: run === undefined ? [] : [{ scheduledAt: run, missed: 0 }],
        skipped: instants.filter((t) => t !== run),
        uncounted: more,
        nextRunAt,
      };
    }
    case "all": {
      const run = instants.slice(-CATCH_UP_ALL_LIMIT);
      return { run: run.map((scheduledAt) => ({ scheduledAt, missed: 0 })), skipped: instants.slice(0, -CATCH_UP_ALL_LIMIT), uncounted: more, nextRunAt };
    }
  }
}
