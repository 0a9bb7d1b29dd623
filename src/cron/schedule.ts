import { Cron } from "croner";
import { z } from "zod";
import { TroupeError } from "../errors.js";

/**
 * A job's schedule, as nanobot has them: `every` N seconds, a 5-field `cron` expression in an IANA
 * timezone, or once `at` an instant. Next times come from croner, never from hand-written arithmetic.
 */
export const scheduleSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("every"), everyS: z.number().int().positive() }),
  z.object({ kind: z.literal("cron"), expr: z.string().min(1), tz: z.string().min(1) }),
  /** atMs: the instant; tz: how it is shown (a naive time was read in it). */
  z.object({ kind: z.literal("at"), atMs: z.number().int(), tz: z.string().min(1) }),
]);
export type Schedule = z.infer<typeof scheduleSchema>;

/** Bad schedule input: one message naming the field. */
export class ScheduleError extends TroupeError {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

export function isValidTimezone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

function checkTimezone(field: string, tz: string): string {
  if (!isValidTimezone(tz)) throw new ScheduleError(field, `unknown timezone ${JSON.stringify(tz)}; use an IANA name such as "Europe/Berlin" or "UTC"`);
  return tz;
}

/** A time with no offset (2026-03-25T08:00 or 2026-03-25 08:00:00), to be read in the job's timezone. */
const NAIVE_ISO = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/;
const ZONED_ISO = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i;

/** The instant an `at` value names: with an offset as given, a naive time in `tz` (croner reads it there). */
export function parseAt(at: string, tz: string): number {
  const text = at.trim();
  if (ZONED_ISO.test(text)) return new Date(text.replace(" ", "T")).getTime();
  if (!NAIVE_ISO.test(text)) {
    throw new ScheduleError("at", `${JSON.stringify(at)} is not an ISO time; write it as 2026-03-25T08:00:00 (read in ${tz}) or with an offset, 2026-03-25T08:00:00+01:00`);
  }
  const once = new Cron(text.replace(" ", "T"), { timezone: tz, paused: true });
  // A naive time names the instant itself: croner gives it as the next run after any earlier moment.
  const instant = once.nextRun(new Date(0));
  if (!instant) throw new ScheduleError("at", `${JSON.stringify(at)} does not name a time in ${tz}`);
  return instant.getTime();
}

function cronOf(expr: string, tz: string): Cron {
  try {
    return new Cron(expr, { timezone: tz, mode: "5-part", paused: true });
  } catch (err) {
    const why = (err as Error).message.replace(/^CronPattern: /, "");
    throw new ScheduleError("cron_expr", `invalid cron expression ${JSON.stringify(expr)} (${why}); use 5 fields: minute hour day-of-month month day-of-week, e.g. "0 9 * * 1-5"`);
  }
}

/**
 * The longest `every`: 10 years. nanobot sets no bound (Python ints have none), but a stored number
 * stops being exact at 2^53 and a next run past year 275760 is no Date; a rarer job is a cron_expr or an at.
 */
export const MAX_EVERY_S = 10 * 365 * 86_400;

export interface ScheduleInput {
  everySeconds?: number;
  cronExpr?: string;
  tz?: string;
  at?: string;
}

/** Turns user input (tool, CLI, API) into a schedule, or throws a ScheduleError naming the bad field. */
export function makeSchedule(input: ScheduleInput, defaultTz: string, now: number): Schedule {
  const given = [input.everySeconds !== undefined, input.cronExpr !== undefined, input.at !== undefined].filter(Boolean).length;
  if (given === 0) throw new ScheduleError("schedule", "give one of every_seconds, cron_expr or at");
  if (given > 1) throw new ScheduleError("schedule", "give only one of every_seconds, cron_expr or at");
  if (input.tz !== undefined && input.cronExpr === undefined && input.at === undefined) {
    throw new ScheduleError("tz", "tz can only be used with cron_expr or at");
  }
  if (input.everySeconds !== undefined) {
    const s = input.everySeconds;
    if (Number.isNaN(s)) throw new ScheduleError("every_seconds", "must be a number of seconds");
    if (s < 1) throw new ScheduleError("every_seconds", `must be at least 1 second, not ${s}`);
    if (s > MAX_EVERY_S) {
      throw new ScheduleError("every_seconds", `must be at most ${MAX_EVERY_S} seconds (10 years), not ${s}; for a rarer job use cron_expr or at`);
    }
    if (!Number.isInteger(s)) throw new ScheduleError("every_seconds", `must be a whole number of seconds, not ${s}`);
    return { kind: "every", everyS: s };
  }
  const tz = checkTimezone("tz", input.tz ?? defaultTz);
  if (input.cronExpr !== undefined) {
    const expr = input.cronExpr.trim();
    const cron = cronOf(expr, tz);
    if (!cron.nextRun(new Date(now))) throw new ScheduleError("cron_expr", `${JSON.stringify(expr)} never fires`);
    return { kind: "cron", expr, tz };
  }
  const atMs = parseAt(input.at!, tz);
  if (atMs <= now) throw new ScheduleError("at", `${input.at} (${new Date(atMs).toISOString()}) is in the past; give a future time`);
  return { kind: "at", atMs, tz };
}

/**
 * The first instant of the schedule strictly after `after`. `every` counts from its anchor (when the
 * job was created), so its instants stay on one grid across restarts. null: no more instants.
 */
export function nextInstant(schedule: Schedule, after: number, anchor: number): number | null {
  switch (schedule.kind) {
    case "every": {
      const step = schedule.everyS * 1000;
      if (after < anchor) return anchor + step;
      return anchor + (Math.floor((after - anchor) / step) + 1) * step;
    }
    case "cron":
      return cronOf(schedule.expr, schedule.tz).nextRun(new Date(after))?.getTime() ?? null;
    case "at":
      return schedule.atMs > after ? schedule.atMs : null;
  }
}

/** The schedule's instants in (from, to], at most `limit` of them (the earliest), and whether there were more. */
export function instantsBetween(schedule: Schedule, from: number, to: number, anchor: number, limit: number): { instants: number[]; more: number } {
  const instants: number[] = [];
  let more = 0;
  for (let t = nextInstant(schedule, from, anchor); t !== null && t <= to; t = nextInstant(schedule, t, anchor)) {
    if (instants.length < limit) instants.push(t);
    else if (++more >= 100_000) break;
  }
  return { instants, more };
}

/** A time as nanobot prints it: `2026-03-25 08:00` in the given timezone. */
export function formatInTz(ms: number, tz: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-CA", { timeZone: tz, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", hourCycle: "h23" })
      .formatToParts(new Date(ms))
      .map((p) => [p.type, p.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}`;
}

/**
 * A time with its zone, for a column that mixes jobs of several timezones (`troupe cron list`,
 * `runs`): `2026-11-25 09:00 +01:00` (the zone's offset at that instant, as nanobot's cron tool
 * gives it), or `2026-11-24 22:50 UTC`.
 */
export function formatWithZone(ms: number, tz: string): string {
  if (tz === "UTC" || tz === "Etc/UTC") return `${formatInTz(ms, tz)} UTC`;
  const name = new Intl.DateTimeFormat("en-US", { timeZone: tz, timeZoneName: "longOffset" }).formatToParts(new Date(ms)).find((p) => p.type === "timeZoneName")?.value;
  // "GMT+01:00", or "GMT" for a zero offset.
  const offset = name?.replace(/^GMT/, "") || "+00:00";
  return `${formatInTz(ms, tz)} ${offset}`;
}

/** The timing as nanobot words it: "every 90s", "every 2h", "cron 0 9 * * * (Asia/Shanghai)", "at 2026-03-25 08:00". */
export function describeSchedule(schedule: Schedule): string {
  switch (schedule.kind) {
    case "every": {
      const s = schedule.everyS;
      if (s % 3600 === 0) return `every ${s / 3600}h`;
      if (s % 60 === 0) return `every ${s / 60}m`;
      return `every ${s}s`;
    }
    case "cron":
      return `cron ${schedule.expr} (${schedule.tz})`;
    case "at":
      return `at ${formatInTz(schedule.atMs, schedule.tz)}${schedule.tz === "UTC" ? "" : ` (${schedule.tz})`}`;
  }
}
