import { fault } from "../fault.js";
import { inboxPutOps, type InboxRecord } from "../store/inbox.js";
import type { Store, StoreOp } from "../store/store.js";
import {
  cronSessionKey,
  delJobOp,
  getJob,
  readJob,
  getRun,
  listJobs,
  listRuns,
  parseRunMessageId,
  pruneRunsOps,
  putJobOps,
  delDueOp,
  dueEntries,
  putRunOp,
  RUN_HISTORY,
  runMessageId,
  type CronJob,
  type CronRun,
} from "./jobs.js";
import { planFiring } from "./plan.js";
import { formatInTz } from "./schedule.js";

/** A run that was recorded and must now start: a turn (its inbox message) or a system job's handler. */
export interface StartedRun {
  job: CronJob;
  run: CronRun;
  inbox: InboxRecord | null;
}

export interface FireResult {
  started: StartedRun[];
  /** The earliest next run of an enabled job, or null when none is scheduled. */
  nextAt: number | null;
  skipped: number;
}

const REPLY_EXCERPT = 200;

/** What the model is asked at a run: the job's message, framed so it knows why it is speaking. */
export function runPrompt(job: CronJob, run: CronRun): string {
  const tz = job.schedule.kind === "every" ? "UTC" : job.schedule.tz;
  const due = `${formatInTz(run.scheduledAt, tz)} ${tz}`;
  const missed = run.missed ? ` It stands for ${run.missed + 1} runs: troupe was not running at ${run.missed} earlier scheduled time(s).` : "";
  const how = run.trigger === "manual" ? "run by hand" : `due ${due}`;
  return `[Scheduled job "${job.name}" (id ${job.id}), ${how}.${missed} Do what it says; your reply is sent to the user as the job's result.]\n\n${job.message}`;
}

/** The records that start a run of a job (synced together with the job's advance, before anything runs). */
function startOps(job: CronJob, run: CronRun): { ops: StoreOp[]; inbox: InboxRecord | null } {
  if (job.system) return { ops: [putRunOp(run)], inbox: null };
  const inbox: InboxRecord = {
    id: run.messageId!,
    sessionKey: cronSessionKey(job.id),
    channel: job.target.channel,
    chatId: job.target.chatId,
    senderId: "cron",
    content: runPrompt(job, run),
    media: [],
    at: run.startedAt ?? run.scheduledAt,
  };
  return { ops: [putRunOp(run), ...inboxPutOps(inbox)], inbox };
}

const newRun = (job: CronJob, scheduledAt: number, now: number, missed: number, trigger: CronRun["trigger"]): CronRun => ({
  v: 1,
  jobId: job.id,
  scheduledAt,
  startedAt: now,
  finishedAt: null,
  status: "running",
  missed,
  trigger,
  // A system job's run is carried out by its handler, not by a message to a session.
  messageId: job.system ? null : runMessageId(job.id, scheduledAt),
  reply: null,
  note: missed ? `${missed} missed run(s) caught up in this one` : null,
});

/** Due-index entries read at a time. */
const DUE_PAGE = 256;
/** Due jobs fired at once. */
const FIRE_CONCURRENCY = 64;

/**
 * Fires every due job, found through the due index (only due jobs are read): per job, one synced
 * batch records its runs (and their inbox messages), advances its next run and moves its index
 * entry, before any of them starts. An instant whose run record exists was fired before (a crash
 * between the batch and now): it is not fired again.
 */
export async function fireDue(store: Store, now: number, startedAt: number, log?: (msg: string, data: object) => void): Promise<FireResult> {
  const started: StartedRun[] = [];
  let skippedTotal = 0;
  for (;;) {
    const page = await dueEntries(store, DUE_PAGE);
    const due = page.filter((e) => e.at <= now);
    const fireEntry = async (entry: { id: string; at: number }) => {
      const job = await getJob(store, entry.id).catch((err: unknown) => {
        log?.("corrupt cron job skipped", { id: entry.id, err });
        return undefined;
      });
      // A stale entry: the job was removed, disabled, or has another next run now.
      if (!job || !job.enabled || job.nextRunAt !== entry.at) return void (await store.batch([delDueOp(entry.at, entry.id)]));
      const fired = await fireJob(store, job, now, startedAt, log);
      started.push(...fired.started);
      skippedTotal += fired.skipped;
    };
    // Jobs are independent: fired side by side, their synced batches share fsyncs (group commit).
    for (let i = 0; i < due.length; i += FIRE_CONCURRENCY) await Promise.all(due.slice(i, i + FIRE_CONCURRENCY).map(fireEntry));
    if (due.length < page.length || page.length < DUE_PAGE) break;
  }
  const [first] = await dueEntries(store, 1);
  return { started, nextAt: first?.at ?? null, skipped: skippedTotal };
}

async function fireJob(store: Store, job: CronJob, now: number, startedAt: number, log?: (msg: string, data: object) => void): Promise<{ started: StartedRun[]; skipped: number }> {
  const plan = planFiring(job, now, startedAt);
  const runs: CronRun[] = [];
  for (const r of plan.run) if (!(await getRun(store, job.id, r.scheduledAt))) runs.push(newRun(job, r.scheduledAt, now, r.missed, "schedule"));
  // The history holds RUN_HISTORY runs: the latest skipped instants are listed, the older ones counted in the first listed.
  const listed = plan.skipped.slice(-Math.max(0, RUN_HISTORY - runs.length));
  const unlisted = plan.skipped.length - listed.length + plan.uncounted;
  const skipped: CronRun[] = listed.map((t, i) => ({
    ...newRun(job, t, now, 0, "schedule"),
    startedAt: null,
    finishedAt: now,
    status: "skipped",
    messageId: null,
    note: `missed while troupe was not running; catchUp is ${job.catchUp}${i === 0 && unlisted ? ` (and ${unlisted} earlier missed instant(s) not listed)` : ""}`,
  }));
  const last = runs.at(-1);
  // An `at` job that was skipped will never run: it stays, disabled, so the skip is visible.
  const done = plan.nextRunAt === null && !last;
  const advanced: CronJob = {
    ...job,
    nextRunAt: plan.nextRunAt,
    enabled: done ? false : job.enabled,
    lastRunAt: last?.scheduledAt ?? job.lastRunAt,
    lastStatus: last ? "running" : skipped.length ? "skipped" : job.lastStatus,
  };
  const starts = runs.map((run) => ({ run, ...startOps(job, run) }));
  const prune = await pruneRunsOps(store, job.id, runs.length + skipped.length);
  const moveDue = job.nextRunAt !== null && job.nextRunAt !== advanced.nextRunAt ? [delDueOp(job.nextRunAt, job.id)] : [];
  await store.batch([...moveDue, ...putJobOps(advanced), ...skipped.map(putRunOp), ...starts.flatMap((s) => s.ops), ...prune], { sync: true });
  if (starts.length) fault("after-cron-run-write");
  if (skipped.length) log?.("missed cron runs skipped", { jobId: job.id, skipped: skipped.length + unlisted, catchUp: job.catchUp });
  return { started: starts.map((s) => ({ job: advanced, run: s.run, inbox: s.inbox })), skipped: skipped.length + unlisted };
}

/** `troupe cron run ID`: a run now, outside the schedule (its next run stays as it is). */
export async function fireNow(store: Store, jobId: string, now: number): Promise<StartedRun | undefined> {
  const job = await readJob(store, jobId);
  if (!job) return undefined;
  // Two manual runs in one millisecond are one instant: the second finds the first's record.
  let at = now;
  while (await getRun(store, job.id, at)) at++;
  const run = newRun(job, at, now, 0, "manual");
  const { ops, inbox } = startOps(job, run);
  const advanced: CronJob = { ...job, lastRunAt: at, lastStatus: "running" };
  await store.batch([...putJobOps(advanced), ...ops, ...(await pruneRunsOps(store, job.id, 1))], { sync: true });
  return { job: advanced, run, inbox };
}

/** Runs a system job's handler left unfinished (the daemon stopped while it decided): started again at start-up. */
export async function unfinishedSystemRuns(store: Store): Promise<StartedRun[]> {
  const out: StartedRun[] = [];
  for (const job of await listJobs(store, { onCorrupt: () => {} })) {
    if (!job.system) continue;
    for (const run of await listRuns(store, job.id, { onCorrupt: () => {} })) {
      if (run.status === "running" && run.messageId === null) out.push({ job, run, inbox: null });
    }
  }
  return out;
}

/** The ops that record how a run ended. */
export function finishRunOps(job: CronJob | undefined, run: CronRun, status: "ok" | "error" | "skipped", reply: string | null, now: number, note?: string): StoreOp[] {
  const flat = reply?.replace(/\s+/g, " ").trim() ?? null;
  const excerpt = flat && flat.length > REPLY_EXCERPT ? `${flat.slice(0, REPLY_EXCERPT - 1)}…` : flat;
  const ops: StoreOp[] = [putRunOp({ ...run, finishedAt: now, status, reply: excerpt, note: note ?? run.note })];
  if (!job) return ops;
  // An `at` job is deleted once it has run (its runs stay for `troupe cron runs`).
  if (job.schedule.kind === "at" && run.trigger === "schedule" && !job.system) ops.push(delJobOp(job.id));
  else ops.push(...putJobOps({ ...job, lastStatus: status }));
  return ops;
}

/**
 * For a turn's final batch: the cron runs among the messages it answers are recorded as ended, in
 * that same batch. deliver: whether the reply goes out (a job made with deliver false keeps it).
 */
export async function cronFinalOps(store: Store, answers: string[], ok: boolean, reply: string, now: number): Promise<{ ops: StoreOp[]; deliver: boolean }> {
  const ops: StoreOp[] = [];
  let deliver = true;
  for (const id of answers) {
    const parsed = parseRunMessageId(id);
    if (!parsed) continue;
    const run = await getRun(store, parsed.jobId, parsed.scheduledAt);
    if (!run || run.status !== "running") continue;
    const job = await getJob(store, parsed.jobId);
    if (job && !job.deliver) deliver = false;
    // A heartbeat with nothing to report sends nothing.
    if (job?.system && !reply.trim()) deliver = false;
    ops.push(...finishRunOps(job, run, ok ? "ok" : "error", reply, now));
  }
  return { ops, deliver };
}
