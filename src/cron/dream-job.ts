import { CRON_FORMAT, type CronJob } from "./jobs.js";

/**
 * Dream as a protected system job, for the cron tool: Dream keeps its own schedule (the supervisor's
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
