import { describe, expect, it } from "vitest";
import { jobListLines, runLines } from "../../src/cli/cron.js";
import { CRON_FORMAT, type CronJob, type CronRun } from "../../src/cron/jobs.js";

/**
 * `troupe cron list` and `troupe cron runs` show each time in its job's timezone, and say which: a
 * cron job's in its tz, an `every` job's in UTC, side by side in one column. nanobot's cron tool
 * does the same (`2026-11-25T09:00:00+01:00 (Europe/Paris)`).
 */
const at = (s: string) => Date.parse(s);
const NOW = at("2026-11-24T22:50:00Z");

const job = (over: Partial<CronJob>): CronJob => ({
  v: CRON_FORMAT,
  id: "j1",
  name: "n",
  message: "ping",
  schedule: { kind: "every", everyS: 3600 },
  enabled: true,
  deliver: false,
  target: { channel: "cron", chatId: "none" },
  catchUp: "once",
  createdBy: null,
  createdAt: NOW,
  anchor: NOW,
  nextRunAt: null,
  lastRunAt: null,
  lastStatus: null,
  ...over,
});

const run = (over: Partial<CronRun>): CronRun => ({
  v: CRON_FORMAT,
  jobId: "n2",
  scheduledAt: NOW,
  startedAt: NOW,
  finishedAt: NOW + 60_000,
  status: "ok",
  missed: 0,
  trigger: "manual",
  messageId: null,
  reply: "pong",
  note: null,
  ...over,
});

describe("cron list and runs: every time says its zone", () => {
  it("a Europe/Paris cron job and an every-1h job side by side: each NEXT RUN and LAST RUN names its zone", () => {
    const paris = job({ id: "n2", name: "n2", schedule: { kind: "cron", expr: "0 9 * * *", tz: "Europe/Paris" }, nextRunAt: at("2026-11-25T08:00:00Z"), lastRunAt: NOW, lastStatus: "ok" });
    const hourly = job({ id: "h1", name: "h1", nextRunAt: at("2026-11-24T23:50:00Z") });
    const lines = jobListLines([paris, hourly]);
    expect(lines[1]).toContain("2026-11-25 09:00 +01:00");
    expect(lines[1]).toContain("2026-11-24 23:50 +01:00 ok");
    expect(lines[2]).toContain("2026-11-24 23:50 UTC");
  });

  it("a zone's offset follows its daylight saving time (Europe/Paris in summer is +02:00)", () => {
    const paris = job({ schedule: { kind: "cron", expr: "0 9 * * *", tz: "Europe/Paris" }, nextRunAt: at("2026-07-01T07:00:00Z") });
    expect(jobListLines([paris])[1]).toContain("2026-07-01 09:00 +02:00");
  });

  it("runs of a Europe/Paris job: SCHEDULED and FINISHED name the zone (the newcomer's 22:50 UTC case)", () => {
    const lines = runLines([run({})], "Europe/Paris");
    expect(lines[1]).toMatch(/^2026-11-24 23:50 \+01:00 +ok +manual +- +2026-11-24 23:51 \+01:00 +pong$/);
    expect(runLines([run({})])[1]).toMatch(/^2026-11-24 22:50 UTC /);
  });
});
