import { randomBytes } from "node:crypto";
import { z } from "zod";
import { CorruptRecordError, TroupeError } from "../errors.js";
import { KEY_END } from "../session-key.js";
import { inboxDeleteOps, sessionInbox } from "../store/inbox.js";
import type { ListOptions, Store, StoreOp } from "../store/store.js";
import { scheduleSchema } from "./schedule.js";

/**
 * Cron jobs and their runs, in the store's `cron` sublevel. A job is `job:<id>`; a run is
 * `run:<id>\0<scheduled instant>`, written (synced) before the run's turn starts, in the same batch
 * that advances the job's next run: a restart finds the instant taken and never fires it again.
 */

export const CRON_FORMAT = 1;
/** Runs kept per job. */
export const RUN_HISTORY = 20;
/** catchUp "all" runs at most this many missed instants. */
export const CATCH_UP_ALL_LIMIT = 10;

export const catchUpSchema = z.enum(["once", "skip", "all"]);
export type CatchUp = z.infer<typeof catchUpSchema>;

export const jobStatusSchema = z.enum(["running", "ok", "error", "skipped"]);

export const cronJobSchema = z.object({
  v: z.literal(CRON_FORMAT),
  id: z.string().min(1),
  name: z.string(),
  message: z.string(),
  schedule: scheduleSchema,
  enabled: z.boolean(),
  /** Send the run's reply to the target (false: the run happens, the reply stays in its session). */
  deliver: z.boolean(),
  target: z.object({ channel: z.string().min(1), chatId: z.string().min(1) }),
  catchUp: catchUpSchema,
  /** A protected system job (heartbeat, dream): listed, never removed by a user. */
  system: z.enum(["heartbeat", "dream"]).optional(),
  createdBy: z.string().nullable(),
  createdAt: z.number(),
  /** The grid `every` counts from. */
  anchor: z.number(),
  nextRunAt: z.number().nullable(),
  lastRunAt: z.number().nullable(),
  lastStatus: jobStatusSchema.nullable(),
});
export type CronJob = z.infer<typeof cronJobSchema>;

export const cronRunSchema = z.object({
  v: z.literal(CRON_FORMAT),
  jobId: z.string(),
  scheduledAt: z.number(),
  startedAt: z.number().nullable(),
  finishedAt: z.number().nullable(),
  status: jobStatusSchema,
  /** Missed instants this run stands for (catchUp "once"), besides its own. */
  missed: z.number().int().nonnegative(),
  trigger: z.enum(["schedule", "manual"]),
  /** The inbox message that carries the run to its session (absent for a skipped instant). */
  messageId: z.string().nullable(),
  reply: z.string().nullable(),
  note: z.string().nullable(),
});
export type CronRun = z.infer<typeof cronRunSchema>;

export const jobKey = (id: string) => `job:${id}`;
const runPrefix = (jobId: string) => `run:${jobId}${KEY_END}`;
export const runKey = (jobId: string, scheduledAt: number) => `${runPrefix(jobId)}${String(scheduledAt).padStart(15, "0")}`;

/** The target of a job made with no chat to report to (its replies stay in its session; deliver is false). */
export const NO_CHAT = { channel: "cron", chatId: "none" } as const;

/** The session a job's runs are turns of. */
export const cronSessionKey = (jobId: string) => `cron:${jobId}`;
/** The inbox message id of a run: it names the job and the instant. */
export const runMessageId = (jobId: string, scheduledAt: number) => `cron:${jobId}:${scheduledAt}`;
export function parseRunMessageId(id: string): { jobId: string; scheduledAt: number } | undefined {
  const m = /^cron:(.+):(\d+)$/.exec(id);
  return m ? { jobId: m[1]!, scheduledAt: Number(m[2]) } : undefined;
}

export const newJobId = () => randomBytes(4).toString("hex");

/**
 * The due index: `due:<instant>:<id>` for each enabled job's next run, so the scheduler reads only
 * what is due, not every job. An entry whose job has moved on (another next run, disabled, removed)
 * is stale: the scheduler drops it when it comes up. Writing a job always writes its entry.
 */
const DUE_PREFIX = "due:";
const pad15 = (n: number) => String(n).padStart(15, "0");
export const dueKey = (at: number, id: string) => `${DUE_PREFIX}${pad15(at)}:${id}`;
export const dueEntrySchema = z.object({ id: z.string(), at: z.number() });

export const putJobOps = (job: CronJob): StoreOp[] => [
  { type: "put", sublevel: "cron", key: jobKey(job.id), value: job },
  ...(job.enabled && job.nextRunAt !== null ? [{ type: "put" as const, sublevel: "cron" as const, key: dueKey(job.nextRunAt, job.id), value: { id: job.id, at: job.nextRunAt } }] : []),
];
export const delDueOp = (at: number, id: string): StoreOp => ({ type: "del", sublevel: "cron", key: dueKey(at, id) });

/** The earliest `limit` entries of the due index, in time order. */
export async function dueEntries(store: Store, limit: number): Promise<Array<{ id: string; at: number }>> {
  return (await store.list("cron", dueEntrySchema, { prefix: DUE_PREFIX, limit, onCorrupt: () => {} })).map((r) => r.value);
}
export const delJobOp = (id: string): StoreOp => ({ type: "del", sublevel: "cron", key: jobKey(id) });
export const putRunOp = (run: CronRun): StoreOp => ({ type: "put", sublevel: "cron", key: runKey(run.jobId, run.scheduledAt), value: run });

export async function getJob(store: Store, id: string): Promise<CronJob | undefined> {
  return store.get("cron", jobKey(id), cronJobSchema);
}

/** What a job cannot do, said as a user can act on it (the control API answers it with 409). */
export class CronJobRefusal extends TroupeError {}

/** getJob for a command on one job: a record that does not read is said so, with the way out of it. */
export async function readJob(store: Store, id: string): Promise<CronJob | undefined> {
  return getJob(store, id).catch((err: unknown) => {
    if (!(err instanceof CorruptRecordError)) throw err;
    // remove deletes it all the same (service.ts).
    throw new CronJobRefusal(`cron job ${id} cannot be read (${err.message}); troupe cron remove ${id} removes it`, { cause: err });
  });
}

export async function listJobs(store: Store, opts: ListOptions = {}): Promise<CronJob[]> {
  return (await store.list("cron", cronJobSchema, { prefix: "job:", ...opts })).map((r) => r.value);
}

export async function getRun(store: Store, jobId: string, scheduledAt: number): Promise<CronRun | undefined> {
  return store.get("cron", runKey(jobId, scheduledAt), cronRunSchema);
}

/** A job's runs, oldest first. */
export async function listRuns(store: Store, jobId: string, opts: ListOptions = {}): Promise<CronRun[]> {
  return (await store.list("cron", cronRunSchema, { prefix: runPrefix(jobId), ...opts })).map((r) => r.value);
}

/** Deletes that keep a job's history at RUN_HISTORY once `adding` more runs are written. */
export async function pruneRunsOps(store: Store, jobId: string, adding: number): Promise<StoreOp[]> {
  const rows = await store.list("cron", cronRunSchema, { prefix: runPrefix(jobId), onCorrupt: () => {} });
  const excess = rows.length + adding - RUN_HISTORY;
  // Running runs are never dropped: their turn still has to record how it ended.
  return rows
    .filter((r) => r.value.status !== "running")
    .slice(0, Math.max(0, excess))
    .map((r) => ({ type: "del", sublevel: "cron", key: r.key }));
}

/** Every record of a job: the job, its runs, and runs queued for its session that have not started. */
export async function deleteJobOps(store: Store, id: string): Promise<StoreOp[]> {
  const runs = await store.list("cron", cronRunSchema, { prefix: runPrefix(id), onCorrupt: () => {} });
  const queued = (await sessionInbox(store, cronSessionKey(id))).map((m) => m.id);
  return [delJobOp(id), ...runs.map((r): StoreOp => ({ type: "del", sublevel: "cron", key: r.key })), ...inboxDeleteOps(cronSessionKey(id), queued)];
}
