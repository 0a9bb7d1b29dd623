import { describe, expect, it } from "vitest";
import type { CronJob } from "../../src/cron/jobs.js";
import { MISSED_AFTER_MS, planFiring } from "../../src/cron/plan.js";
import { describeSchedule, instantsBetween, makeSchedule, nextInstant, type Schedule } from "../../src/cron/schedule.js";

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const at = (s: string) => Date.parse(s);
const NOW = at("2026-03-01T12:00:00Z");

describe("next-time computation", () => {
  it("every: a grid from the job's anchor, kept across restarts", () => {
    const s: Schedule = { kind: "every", everyS: 90 };
    const anchor = at("2026-03-01T00:00:00Z");
    expect(iso(nextInstant(s, anchor, anchor))).toBe("2026-03-01T00:01:30.000Z");
    expect(iso(nextInstant(s, anchor + 100_000, anchor))).toBe("2026-03-01T00:03:00.000Z");
    // Exactly on an instant: the next one, not the same.
    expect(iso(nextInstant(s, anchor + 180_000, anchor))).toBe("2026-03-01T00:04:30.000Z");
  });

  it("cron in a timezone (nanobot's Asia/Shanghai case)", () => {
    const s = makeSchedule({ cronExpr: "0 9 * * *", tz: "Asia/Shanghai" }, "UTC", NOW);
    expect(s).toEqual({ kind: "cron", expr: "0 9 * * *", tz: "Asia/Shanghai" });
    expect(iso(nextInstant(s, at("2026-03-25T00:00:00Z"), 0))).toBe("2026-03-25T01:00:00.000Z");
  });

  it("cron without tz takes agents.defaults.timezone", () => {
    const s = makeSchedule({ cronExpr: "0 9 * * 1-5" }, "America/Denver", NOW);
    expect(s).toMatchObject({ tz: "America/Denver" });
    // Monday 2026-03-02 09:00 MST is 16:00 UTC.
    expect(iso(nextInstant(s, NOW, 0))).toBe("2026-03-02T16:00:00.000Z");
  });

  it("DST spring forward: a time that does not exist that day fires once, at the hour after", () => {
    const s: Schedule = { kind: "cron", expr: "30 2 * * *", tz: "America/New_York" };
    const days = instantsBetween(s, at("2026-03-07T00:00:00Z"), at("2026-03-10T00:00:00Z"), 0, 10).instants.map(iso);
    expect(days).toEqual(["2026-03-07T07:30:00.000Z", "2026-03-08T07:00:00.000Z", "2026-03-09T06:30:00.000Z"]);
  });

  it("DST fall back: a time that happens twice fires once", () => {
    const s: Schedule = { kind: "cron", expr: "30 1 * * *", tz: "America/New_York" };
    const days = instantsBetween(s, at("2026-10-31T12:00:00Z"), at("2026-11-03T00:00:00Z"), 0, 10).instants.map(iso);
    expect(days).toEqual(["2026-11-01T05:30:00.000Z", "2026-11-02T06:30:00.000Z"]);
  });

  it("at: a naive time is read in the job's timezone; an offset is taken as given", () => {
    const naive = makeSchedule({ at: "2026-03-25T08:00:00", tz: "Asia/Shanghai" }, "UTC", NOW);
    expect(naive).toEqual({ kind: "at", atMs: at("2026-03-25T00:00:00Z"), tz: "Asia/Shanghai" });
    const defaultTz = makeSchedule({ at: "2026-03-25 08:00" }, "Europe/Berlin", NOW);
    expect(iso((defaultTz as { atMs: number }).atMs)).toBe("2026-03-25T07:00:00.000Z");
    const offset = makeSchedule({ at: "2026-03-25T08:00:00+02:00" }, "Asia/Shanghai", NOW);
    expect(iso((offset as { atMs: number }).atMs)).toBe("2026-03-25T06:00:00.000Z");
    expect(nextInstant(naive, at("2026-03-25T00:00:00Z"), 0)).toBeNull();
  });
});

describe("bad input: one error naming the field", () => {
  const cases: Array<[string, Parameters<typeof makeSchedule>[0], RegExp]> = [
    ["invalid expression", { cronExpr: "61 * * * *" }, /^cron_expr: invalid cron expression "61 \* \* \* \*".*minute/],
    ["six fields", { cronExpr: "0 0 9 * * *" }, /^cron_expr: .*5 fields/],
    ["unknown tz", { cronExpr: "0 9 * * *", tz: "Mars/Base" }, /^tz: unknown timezone "Mars\/Base"/],
    ["tz for an interval", { everySeconds: 60, tz: "UTC" }, /^tz: tz can only be used with cron_expr or at/],
    ["a time in the past", { at: "2020-01-01T00:00:00" }, /^at: 2020-01-01T00:00:00 .* is in the past/],
    ["not a time", { at: "tomorrow at 9" }, /^at: "tomorrow at 9" is not an ISO time/],
    ["every below 1 s", { everySeconds: 0.5 }, /^every_seconds: must be at least 1 second, not 0.5/],
    ["every zero", { everySeconds: 0 }, /^every_seconds: must be at least 1 second/],
    // Beyond what a stored record can hold (2^53 - 1): once stored, the job could not be listed or removed.
    ["every past 2^53 (troupe cron add --every 9007199254740993)", { everySeconds: Number("9007199254740993") }, /^every_seconds: must be at most 315360000 seconds \(10 years\), not 9007199254740992/],
    ["every 1e300 (the cron tool)", { everySeconds: 1e300 }, /^every_seconds: must be at most 315360000 seconds \(10 years\)/],
    ["every 1e308 (the control API)", { everySeconds: 1e308 }, /^every_seconds: must be at most 315360000 seconds/],
    ["every infinite", { everySeconds: Infinity }, /^every_seconds: must be at most 315360000 seconds/],
    ["every one past the cap", { everySeconds: 315_360_001 }, /^every_seconds: must be at most 315360000 seconds.*use cron_expr or at/],
    ["no schedule", {}, /^schedule: give one of every_seconds, cron_expr or at/],
    ["two schedules", { everySeconds: 60, cronExpr: "* * * * *" }, /^schedule: give only one/],
  ];
  for (const [name, input, message] of cases) {
    it(name, () => expect(() => makeSchedule(input, "UTC", NOW)).toThrow(message));
  }

  it("every: 10 years, the cap, is still taken", () => {
    expect(makeSchedule({ everySeconds: 315_360_000 }, "UTC", NOW)).toEqual({ kind: "every", everyS: 315_360_000 });
  });
});

describe("timing as nanobot words it", () => {
  it.each([
    [{ kind: "every", everyS: 90 }, "every 90s"],
    [{ kind: "every", everyS: 30 }, "every 30s"],
    [{ kind: "every", everyS: 1800 }, "every 30m"],
    [{ kind: "every", everyS: 7200 }, "every 2h"],
    [{ kind: "cron", expr: "0 9 * * *", tz: "Asia/Shanghai" }, "cron 0 9 * * * (Asia/Shanghai)"],
    [{ kind: "at", atMs: at("2026-03-25T08:00:00Z"), tz: "UTC" }, "at 2026-03-25 08:00"],
    [{ kind: "at", atMs: at("2026-03-25T00:00:00Z"), tz: "Asia/Shanghai" }, "at 2026-03-25 08:00 (Asia/Shanghai)"],
  ] as Array<[Schedule, string]>)("%j → %s", (s, text) => expect(describeSchedule(s)).toBe(text));
});

describe("catch-up after downtime across 5 instants (fake clock)", () => {
  const anchor = at("2026-03-01T00:00:00Z");
  const job = (catchUp: CronJob["catchUp"], schedule: Schedule = { kind: "every", everyS: 60 }): CronJob => ({
    v: 1,
    id: "j1",
    name: "n",
    message: "m",
    schedule,
    enabled: true,
    deliver: true,
    target: { channel: "api", chatId: "c" },
    catchUp,
    createdBy: null,
    createdAt: anchor,
    anchor,
    nextRunAt: anchor + 60_000,
    lastRunAt: null,
    lastStatus: null,
  });
  // Down from before the first instant until 20 s after the fifth; the daemon has just started.
  const now = anchor + 5 * 60_000 + 20_000;
  const startedAt = now - 1_000;

  it("once: one run for all five, saying four were missed", () => {
    const plan = planFiring(job("once"), now, startedAt);
    expect(plan.run).toEqual([{ scheduledAt: anchor + 5 * 60_000, missed: 4 }]);
    expect(plan.skipped).toEqual([]);
    expect(plan.nextRunAt).toBe(anchor + 6 * 60_000);
  });

  it("skip: all five recorded as skipped, the next run at the next instant", () => {
    const plan = planFiring(job("skip"), now, startedAt);
    expect(plan.run).toEqual([]);
    expect(plan.skipped).toHaveLength(5);
    expect(plan.nextRunAt).toBe(anchor + 6 * 60_000);
  });

  it("all: each of the five runs", () => {
    const plan = planFiring(job("all"), now, startedAt);
    expect(plan.run.map((r) => r.scheduledAt)).toEqual([1, 2, 3, 4, 5].map((i) => anchor + i * 60_000));
    expect(plan.skipped).toEqual([]);
  });

  it("all is bounded at 10; the older ones are recorded as skipped", () => {
    const late = anchor + 25 * 60_000 + 1_000;
    const plan = planFiring(job("all"), late, late - 1);
    expect(plan.run).toHaveLength(10);
    expect(plan.run[9]!.scheduledAt).toBe(anchor + 25 * 60_000);
    expect(plan.skipped).toHaveLength(15);
  });

  it("skip still runs an instant that is on time", () => {
    const onTime = anchor + 60_000 + 50;
    const plan = planFiring(job("skip"), onTime, anchor);
    expect(plan.run).toEqual([{ scheduledAt: anchor + 60_000, missed: 0 }]);
    expect(MISSED_AFTER_MS).toBeGreaterThan(50);
  });

  it("nothing is due before the next instant; a disabled job never is", () => {
    expect(planFiring(job("once"), anchor + 59_000, anchor).run).toEqual([]);
    expect(planFiring({ ...job("once"), enabled: false }, now, startedAt).run).toEqual([]);
  });

  it("an at job, once run, has no next instant", () => {
    const plan = planFiring({ ...job("once", { kind: "at", atMs: anchor + 60_000, tz: "UTC" }) }, now, startedAt);
    expect(plan.run).toEqual([{ scheduledAt: anchor + 60_000, missed: 0 }]);
    expect(plan.nextRunAt).toBeNull();
  });
});
