import { createHash } from "node:crypto";
import { z } from "zod";
import { lazySchema } from "../../lazy-schema.js";
import type { CronJob } from "../../cron/jobs.js";
import type * as ScheduleModule from "../../cron/schedule.js";
import type { CronService } from "../../cron/service.js";
import { defineTool, ToolError, type ToolContext } from "../contract.js";

/** Sessions whose turns are scheduled runs: they may not schedule more (no jobs from inside a job). */
export const isScheduledRun = (sessionKey: string) => sessionKey.startsWith("cron:") || sessionKey === "heartbeat";

const SYSTEM_PURPOSE: Record<NonNullable<CronJob["system"]>, string> = {
  heartbeat: "Heartbeat: checks HEARTBEAT.md for tasks periodically.",
  dream: "Dream memory consolidation for long-term memory.",
};

/** Why a system job cannot be removed, in the cron tool's answer (nanobot's words). */
const SYSTEM_REMOVE: Record<NonNullable<CronJob["system"]>, string> = {
  heartbeat: "This is a system-managed heartbeat job that checks HEARTBEAT.md for tasks.",
  dream: "This is a system-managed Dream memory consolidation job for long-term memory.",
};

const displayTz = (job: CronJob, fallback: string) => (job.schedule.kind === "every" ? fallback : job.schedule.tz);

/** One job as the cron tool lists it (nanobot's words). */
function describeJob({ describeSchedule, formatInTz }: typeof ScheduleModule, job: CronJob, defaultTz: string): string {
  const tz = displayTz(job, defaultTz);
  const lines = [`- ${job.name} (id: ${job.id}, ${describeSchedule(job.schedule)}${job.enabled ? "" : ", disabled"})`];
  if (job.system) lines.push(`  Purpose: ${SYSTEM_PURPOSE[job.system]}`, "  Protected: visible for inspection, but cannot be removed.");
  if (job.lastRunAt !== null) lines.push(`  Last run: ${formatInTz(job.lastRunAt, tz)} (${tz}) — ${job.lastStatus ?? "unknown"}`);
  if (job.enabled && job.nextRunAt !== null) lines.push(`  Next run: ${formatInTz(job.nextRunAt, tz)} (${tz})`);
  return lines.join("\n");
}

/**
 * `service` is made at the first call: the cron service and croner load only when a turn uses the tool
 * (`troupe agent` registers it too, and its start-up does not pay for them). The service lists Dream
 * as a protected system job when the daemon runs it (src/cron/dream-job.ts).
 */
export function cronTool(deps: { service: () => Promise<CronService>; defaultTz: string }) {
  return defineTool({
    name: "cron",
    description:
      "Schedule reminders and recurring tasks. Actions: add, list, remove. add needs a message and one schedule: " +
      `every_seconds, cron_expr (5 fields, with optional tz) or at (ISO time, once). Without tz, times are in ${deps.defaultTz}. ` +
      "Each run's reply is sent to this chat.",
    parameters: lazySchema(() => z.object({
      action: z.enum(["add", "list", "remove"]).describe("Action to perform"),
      name: z.string().optional().describe("Optional short label for the job; defaults to the first 30 characters of message"),
      message: z.string().optional().describe("REQUIRED for add: what the agent should do (or remind of) when the job runs"),
      every_seconds: z.number().optional().describe("Interval in seconds (recurring), 1 to 315360000 (10 years)"),
      cron_expr: z.string().optional().describe("Cron expression like '0 9 * * *' (recurring)"),
      tz: z.string().optional().describe("IANA timezone for cron_expr or a naive at, e.g. 'America/Vancouver'"),
      at: z.string().optional().describe("ISO datetime for one run, e.g. '2026-02-12T10:30:00'; the job is deleted after it runs"),
      deliver: z.boolean().optional().describe("Send each run's reply to this chat (default true)"),
      catch_up: z.enum(["once", "skip", "all"]).optional().describe("Runs missed while troupe was down: once (default), skip, or all (at most 10)"),
      job_id: z.string().optional().describe("REQUIRED for remove: the job's id (see action=list)"),
    })),
    // add derives the job's id from the call: repeated after a crash, it finds the job it made.
    idempotent: true,
    async execute(args, ctx: ToolContext) {
      const [schedule, service] = await Promise.all([import("../../cron/schedule.js"), deps.service()]);
      if (args.action === "list") {
        const { jobs, corrupt } = await service.listing();
        const unreadable = corrupt.map((c) => `- ${c.key} does not read (${c.problem}); action=remove job_id=${c.key.replace(/^job:/, "")} removes it`);
        if (unreadable.length) unreadable.unshift("Skipped job records:");
        if (jobs.length === 0) return ["No scheduled jobs.", ...unreadable].join("\n");
        return ["Scheduled jobs:", ...jobs.map((j) => describeJob(schedule, j, deps.defaultTz)), ...unreadable].join("\n");
      }
      if (args.action === "remove") {
        if (!args.job_id?.trim()) throw new ToolError("job_id is required for remove (action=list shows the ids)");
        const id = args.job_id.trim();
        const result = await service.remove(id);
        if (result === "protected") {
          const why = id === "heartbeat" || id === "dream" ? SYSTEM_REMOVE[id] : "This is a protected system-managed cron job.";
          return `Cannot remove job \`${id}\`.\n${why}\nIt remains visible so you can inspect it, but it cannot be removed.`;
        }
        if (result === "missing") throw new ToolError(`job ${id} not found (action=list shows the jobs)`);
        return `Removed job ${id}`;
      }
      if (isScheduledRun(ctx.sessionKey)) throw new ToolError("cannot schedule new jobs from within a cron job run");
      if (!args.message?.trim()) {
        throw new ToolError('cron action=add requires a non-empty message saying what to do when the job runs; retry with message="..."');
      }
      if (!ctx.channel || !ctx.chatId) throw new ToolError("scheduled jobs must be created from a chat session");
      try {
        const job = await service.add({
          name: args.name,
          message: args.message,
          everySeconds: args.every_seconds,
          cronExpr: args.cron_expr,
          tz: args.tz,
          at: args.at,
          deliver: args.deliver,
          catchUp: args.catch_up,
          target: { channel: ctx.channel, chatId: ctx.chatId },
          createdBy: ctx.sessionKey,
          id: createHash("sha256").update(ctx.idempotencyKey).digest("hex").slice(0, 8),
        });
        return `Created job '${job.name}' (id: ${job.id}, ${schedule.describeSchedule(job.schedule)})`;
      } catch (err) {
        if (err instanceof schedule.ScheduleError) throw new ToolError(err.message);
        throw err;
      }
    },
  });
}
