import { CorruptRecordError } from "../errors.js";
import type { CorruptRecord, Store } from "../store/store.js";
import {
  catchUpSchema,
  CRON_FORMAT,
  CronJobRefusal,
  deleteJobOps,
  getJob,
  jobKey,
  listJobs,
  listRuns,
  newJobId,
  putJobOps,
  readJob,
  type CatchUp,
  type CronJob,
  type CronRun,
} from "./jobs.js";
import { DREAM_REFUSALS, type DreamListing } from "./dream-job.js";
import { makeSchedule, nextInstant, ScheduleError, type Schedule, type ScheduleInput } from "./schedule.js";

export interface AddJobInput extends ScheduleInput {
  name?: string;
  message: string;
  deliver?: boolean;
  target: { channel: string; chatId: string };
  catchUp?: string;
  createdBy?: string | null;
  /** A stable id (the cron tool derives it from its call, so a call repeated after a crash finds its job). */
  id?: string;
}

export interface CronServiceDeps {
  store: Store;
  /** agents.defaults.timezone: for cron expressions and naive `at` times without a tz. */
  defaultTz: string;
  now?: () => number;
  /** Told after every change, so the scheduler re-arms. */
  changed?: () => void;
  /** Told of a job record that does not parse, skipped by a listing or removed (the daemon logs it). */
  warn?: (record: CorruptRecord, what: string) => void;
  /** Dream as a protected system job (src/cron/dream-job.ts), when Dream is on: listed, never stored. */
  dream?: () => Promise<DreamListing>;
}

export type RemoveResult = "removed" | "protected" | "missing";


/** The jobs as users and the agent manage them: add, list, remove, enable/disable, runs. */
export function createCronService(deps: CronServiceDeps) {
  const now = deps.now ?? Date.now;
  const changed = () => deps.changed?.();

  /** Builds a job from user input; every bad field is one ScheduleError naming it. */
  function buildJob(input: AddJobInput, at: number): CronJob {
    const message = input.message.trim();
    if (!message) throw new ScheduleError("message", "must not be empty: say what to do (or what to remind of) when the job runs");
    const catchUp = catchUpSchema.safeParse(input.catchUp ?? "once");
    if (!catchUp.success) throw new ScheduleError("catch_up", `must be once, skip or all, not ${JSON.stringify(input.catchUp)}`);
    const schedule = makeSchedule(input, deps.defaultTz, at);
    return {
      v: CRON_FORMAT,
      id: input.id ?? newJobId(),
      name: input.name?.trim() || message.slice(0, 30),
      message,
      schedule,
      enabled: true,
      deliver: input.deliver ?? true,
      target: input.target,
      catchUp: catchUp.data as CatchUp,
      createdBy: input.createdBy ?? null,
      createdAt: at,
      anchor: at,
      nextRunAt: nextInstant(schedule, at, at),
      lastRunAt: null,
      lastStatus: null,
    };
  }

  /** The stored jobs; a record that does not parse is skipped and named, so one bad record never hides the rest. */
  async function stored(): Promise<{ jobs: CronJob[]; corrupt: CorruptRecord[] }> {
    const corrupt: CorruptRecord[] = [];
    const jobs = await listJobs(deps.store, { onCorrupt: (r) => corrupt.push(r) });
    for (const r of corrupt) deps.warn?.(r, "corrupt record skipped in a cron job listing");
    return { jobs, corrupt };
  }
  /** Dream's system job when `id` names it and Dream is on. */
  const dreamJob = async (id: string) => (id === "dream" && deps.dream ? (await deps.dream()).job : undefined);

  return {
    buildJob,
    async add(input: AddJobInput): Promise<CronJob> {
      const job = buildJob(input, now());
      const existing = input.id ? await getJob(deps.store, input.id) : undefined;
      if (existing) return existing;
      await deps.store.batch(putJobOps(job), { sync: true });
      changed();
      return job;
    },
    get: async (id: string) => (await dreamJob(id)) ?? readJob(deps.store, id),
    /** What `troupe cron list` and the cron tool show: the stored jobs, then Dream. */
    async listing(): Promise<{ jobs: CronJob[]; corrupt: CorruptRecord[] }> {
      const { jobs, corrupt } = await stored();
      const dream = await deps.dream?.();
      if (dream?.corrupt) {
        corrupt.push(dream.corrupt);
        deps.warn?.(dream.corrupt, "corrupt Dream record: Dream is listed without its next run");
      }
      return { jobs: dream ? [...jobs, dream.job] : jobs, corrupt };
    },
    /** The stored jobs (the ones the scheduler runs). */
    list: async () => (await stored()).jobs,
    async runs(id: string): Promise<CronRun[]> {
      if (await dreamJob(id)) throw new CronJobRefusal(DREAM_REFUSALS.runs);
      return listRuns(deps.store, id);
    },
    /** Refuses `troupe cron run` of a job that is not run by cron (Dream). */
    async checkRun(id: string): Promise<void> {
      if (await dreamJob(id)) throw new CronJobRefusal(DREAM_REFUSALS.run);
    },
    /** A job record that does not parse is removed all the same: it is the way out of it. */
    async remove(id: string): Promise<RemoveResult> {
      if (await dreamJob(id)) return "protected";
      const job = await getJob(deps.store, id).catch((err: unknown) => {
        if (!(err instanceof CorruptRecordError)) throw err;
        deps.warn?.({ sublevel: "cron", key: jobKey(id), problem: err.message }, "corrupt cron job record removed");
        return null;
      });
      if (job === undefined) return "missing";
      if (job?.system) return "protected";
      await deps.store.batch(await deleteJobOps(deps.store, id), { sync: true });
      changed();
      return "removed";
    },
    /** Enables (its next run counted from now) or disables a job; undefined when there is none. */
    async setEnabled(id: string, enabled: boolean): Promise<CronJob | undefined> {
      if (await dreamJob(id)) throw new CronJobRefusal(DREAM_REFUSALS.enable);
      const job = await readJob(deps.store, id);
      if (!job) return undefined;
      const at = now();
      const next: CronJob = { ...job, enabled, nextRunAt: enabled ? (job.enabled ? job.nextRunAt : nextInstant(job.schedule, at, job.anchor)) : job.nextRunAt };
      await deps.store.batch(putJobOps(next), { sync: true });
      changed();
      return next;
    },
    /**
     * Puts a protected system job (heartbeat, dream) in place with this schedule, or takes it away
     * when `schedule` is null. Its runs and its place in time are kept across restarts.
     */
    async ensureSystemJob(kind: NonNullable<CronJob["system"]>, spec: { name: string; message: string; schedule: Schedule; target: CronJob["target"] } | null) {
      const existing = await getJob(deps.store, kind);
      if (!spec) {
        if (existing) await deps.store.batch(await deleteJobOps(deps.store, kind), { sync: true });
        return undefined;
      }
      const same = existing && JSON.stringify(existing.schedule) === JSON.stringify(spec.schedule);
      // Same schedule: kept as it is (its next run, and a user's `troupe cron disable`, survive a restart).
      if (existing && same) return existing;
      const at = now();
      const job: CronJob = {
        v: CRON_FORMAT,
        id: kind,
        name: spec.name,
        message: spec.message,
        schedule: spec.schedule,
        enabled: true,
        deliver: true,
        target: spec.target,
        catchUp: "once",
        system: kind,
        createdBy: null,
        createdAt: existing?.createdAt ?? at,
        anchor: at,
        nextRunAt: nextInstant(spec.schedule, at, at),
        lastRunAt: existing?.lastRunAt ?? null,
        lastStatus: existing?.lastStatus ?? null,
      };
      await deps.store.batch(putJobOps(job), { sync: true });
      return job;
    },
  };
}
export type CronService = ReturnType<typeof createCronService>;
