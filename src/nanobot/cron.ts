import { NO_CHAT, type CronJob } from "../cron/jobs.js";
import type { AddJobInput } from "../cron/service.js";
import { ScheduleError, type ScheduleInput } from "../cron/schedule.js";

/**
 * A nanobot cron store (nanobot/cron/service.py _save_store, types.py): `{"version":1,"jobs":[{id,
 * name, enabled, schedule{kind,atMs,everyMs,expr,tz}, payload{kind,message,deliver,channel,to,
 * sessionKey,originChannel,originChatId}, state{nextRunAtMs,lastRunAtMs,lastStatus}, createdAtMs,
 * deleteAfterRun}]}`, camelCase with snake_case fallbacks (as nanobot reads it).
 */


type Raw = Record<string, unknown>;
const obj = (v: unknown): Raw => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Raw) : {});
const field = (o: Raw, camel: string, snake: string): unknown => o[camel] ?? o[snake];
/** nanobot's _store_int: a number or a numeric string; null, "" and anything else are absent. */
function int(v: unknown): number | undefined {
  if (typeof v === "number" && Number.isFinite(v)) return Math.trunc(v);
  if (typeof v === "string" && /^-?\d+$/.test(v.trim())) return Number(v);
  return undefined;
}
const str = (v: unknown): string | undefined => (typeof v === "string" && v.trim() ? v.trim() : undefined);

/** Ids a troupe system job has: a nanobot job under one would be replaced by it. */
const RESERVED_IDS = new Set(["heartbeat", "dream"]);
/** Channels troupe delivers to. */
const CHANNELS = new Set(["telegram", "api"]);

export interface MappedJob {
  id: string;
  name: string;
  job?: CronJob;
  /** Why it is not imported. */
  skip?: string;
}

/** Where nanobot sends the job's reply: the legacy channel/to, else the session it is bound to (v0.3.0). */
function targetOf(payload: Raw): { channel: string; chatId: string; bound: boolean } | undefined {
  const channel = str(payload.channel);
  const to = str(payload.to);
  if (channel && to) return { channel, chatId: to, bound: false };
  const origin = str(field(payload, "originChannel", "origin_channel"));
  const originChat = str(field(payload, "originChatId", "origin_chat_id"));
  if (origin && originChat) return { channel: origin, chatId: originChat, bound: true };
  const sessionKey = str(field(payload, "sessionKey", "session_key"));
  const cut = sessionKey?.indexOf(":") ?? -1;
  if (sessionKey && cut > 0 && cut < sessionKey.length - 1) return { channel: sessionKey.slice(0, cut), chatId: sessionKey.slice(cut + 1), bound: true };
  return undefined;
}

function scheduleOf(schedule: Raw, now: number): ScheduleInput | string {
  const kind = schedule.kind;
  const tz = str(schedule.tz);
  if (kind === "every") {
    const everyMs = int(field(schedule, "everyMs", "every_ms"));
    if (everyMs === undefined) return "an every schedule without everyMs";
    if (everyMs % 1000 !== 0) return `every ${everyMs} ms: troupe runs jobs every whole number of seconds`;
    return { everySeconds: everyMs / 1000 };
  }
  if (kind === "cron") {
    const expr = str(schedule.expr);
    return expr ? { cronExpr: expr, ...(tz ? { tz } : {}) } : "a cron schedule without expr";
  }
  if (kind === "at") {
    const atMs = int(field(schedule, "atMs", "at_ms"));
    if (atMs === undefined) return "an at schedule without atMs";
    if (atMs <= now) return `at ${new Date(atMs).toISOString()} is in the past (it ran, or its time went by)`;
    return { at: new Date(atMs).toISOString(), ...(tz ? { tz } : {}) };
  }
  return `schedule kind ${JSON.stringify(kind)} is none of cron, every, at`;
}

/** One nanobot job as a troupe job (built as `troupe cron add` builds one), or the reason it is skipped. */
export function mapNanobotJob(raw: unknown, build: (input: AddJobInput, at: number) => CronJob, now: number): MappedJob {
  const j = obj(raw);
  const id = typeof j.id === "string" ? j.id : "";
  const name = typeof j.name === "string" ? j.name : "";
  const skip = (reason: string): MappedJob => ({ id: id || "(no id)", name, skip: reason });
  if (!/^[\w.-]{1,64}$/.test(id)) return skip(`id ${JSON.stringify(j.id)} is not 1-64 letters, digits, '.', '_' or '-'`);
  if (RESERVED_IDS.has(id)) return skip(`id ${id} is troupe's own ${id} job (set in config: gateway.heartbeat, agents.defaults.dream)`);
  const payload = obj(j.payload);
  if ((payload.kind ?? "agent_turn") !== "agent_turn") return skip(`a ${String(payload.kind)} job (nanobot's own; troupe has its own heartbeat and Dream)`);
  const message = typeof payload.message === "string" ? payload.message : "";
  if (!message.trim()) return skip("no message to run");
  const deleteAfterRun = Boolean(field(j, "deleteAfterRun", "delete_after_run"));
  const schedule = obj(j.schedule);
  if (deleteAfterRun && schedule.kind !== "at") return skip(`deleteAfterRun on a ${String(schedule.kind)} job: troupe removes only at jobs after their run`);
  const timing = scheduleOf(schedule, now);
  if (typeof timing === "string") return skip(timing);
  const target = targetOf(payload);
  if (!target && payload.deliver === true) return skip("deliver is set but no channel/to names where to (nanobot v0.3.0 disables such a job too); troupe cron add --channel --to makes it again");
  if (target && !CHANNELS.has(target.channel)) return skip(`it delivers to ${target.channel}:${target.chatId}, and troupe has no ${target.channel} channel (only telegram and api)`);
  const state = obj(j.state);
  let job: CronJob;
  try {
    job = build(
      {
        ...timing,
        id,
        name,
        message,
        // A session-bound job (v0.3.0) replies in its chat; a legacy one as its deliver says; one with no chat keeps its replies.
        deliver: target ? target.bound || payload.deliver === true : false,
        target: target ? { channel: target.channel, chatId: target.chatId } : { channel: NO_CHAT.channel, chatId: NO_CHAT.chatId },
        createdBy: "nanobot",
      },
      now,
    );
  } catch (err) {
    if (err instanceof ScheduleError) return skip(err.message);
    throw err;
  }
  const lastStatus = field(state, "lastStatus", "last_status");
  return {
    id,
    name,
    job: {
      ...job,
      enabled: j.enabled !== false,
      createdAt: int(field(j, "createdAtMs", "created_at_ms")) || now,
      lastRunAt: int(field(state, "lastRunAtMs", "last_run_at_ms")) ?? null,
      lastStatus: lastStatus === "ok" || lastStatus === "error" || lastStatus === "skipped" ? lastStatus : null,
    },
  };
}
