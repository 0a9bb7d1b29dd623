import { TroupeError } from "../errors.js";
import { fireNow } from "../cron/fire.js";
import { DREAM_REFUSALS, dreamCronJob } from "../cron/dream-job.js";
import type { CronJob, CronRun } from "../cron/jobs.js";
import { heartbeatJobSpec } from "../cron/heartbeat.js";
import { addJobInput, type AddJobRequest } from "../cron/requests.js";
import { describeSchedule, formatWithZone, ScheduleError } from "../cron/schedule.js";
import { createCronService, type CronService } from "../cron/service.js";
import type { DataPaths } from "../paths.js";
import { openStore, type CorruptRecord, type Store } from "../store/store.js";
import { connectDaemon, type DaemonClient } from "./client.js";
import { corruptLines } from "./corrupt-lines.js";
import { loadForCli } from "./load.js";
import { printable } from "./printable.js";

/** Through the running daemon when there is one (it holds the store and re-arms its scheduler), else on the store. */
async function withCron<T>(paths: DataPaths, viaApi: (client: DaemonClient) => Promise<T>, direct: (service: CronService, store: Store) => Promise<T>): Promise<T> {
  const client = await connectDaemon(paths);
  if (client) {
    // 409: what the job cannot do, in the daemon's words (CronJobRefusal, src/cron/jobs.ts), said as it is.
    return viaApi(client).catch((err: Error) => {
      const refusal = /^daemon answered 409: (.*)$/s.exec(err.message);
      throw refusal ? new TroupeError(refusal[1]!) : err;
    });
  }
  const { config } = await loadForCli();
  const store = await openStore(paths.storeDir);
  // Dream is listed as the daemon lists it: from its record (its next and last run).
  const dream = dreamCronJob(config.agents.defaults.dream, store);
  try {
    const service = createCronService({ store, defaultTz: config.agents.defaults.timezone, ...(dream ? { dream } : {}) });
    // The heartbeat as the daemon puts it in place at start, so it is listed and can be disabled before a daemon ever ran.
    await service.ensureSystemJob("heartbeat", heartbeatJobSpec(config.gateway.heartbeat));
    return await direct(service, store);
  } finally {
    await store.close();
  }
}

const enc = encodeURIComponent;
/** 404 from the daemon: no such job. */
const unlessMissing = (err: Error) => {
  if (/\b404\b/.test(err.message)) return undefined;
  throw err;
};
const noJob = (id: string) => new TroupeError(`no cron job ${id}; troupe cron list shows them`);

const tzOf = (job: CronJob) => (job.schedule.kind === "every" ? "UTC" : job.schedule.tz);

/** Names, replies and notes come from the model and the chat: their control characters are escaped. */
function table(header: string[], cells: string[][]): string[] {
  const rows = cells.map((r) => r.map(printable));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [header, ...rows].map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  ").trimEnd());
}

/** The heartbeat's stored target only names its session: its reply goes to the chat someone last wrote from. */
const deliversTo = (j: CronJob) => (j.system === "heartbeat" ? "(the chat last written from)" : j.deliver ? `${j.target.channel}:${j.target.chatId}` : "(not delivered)");

export function jobListLines(jobs: CronJob[]): string[] {
  if (jobs.length === 0) return ["no cron jobs; add one with: troupe cron add --name N --message M --every 3600"];
  const rows = jobs.map((j) => [
    j.id,
    j.name,
    describeSchedule(j.schedule),
    `${j.enabled ? "enabled" : "disabled"}${j.system ? " (system)" : ""}`,
    j.enabled && j.nextRunAt !== null ? formatWithZone(j.nextRunAt, tzOf(j)) : "-",
    j.lastRunAt !== null ? `${formatWithZone(j.lastRunAt, tzOf(j))} ${j.lastStatus ?? ""}`.trim() : "-",
    deliversTo(j),
  ]);
  return table(["ID", "NAME", "SCHEDULE", "STATE", "NEXT RUN", "LAST RUN", "DELIVERS TO"], rows);
}

export function runLines(runs: CronRun[], tz = "UTC"): string[] {
  if (runs.length === 0) return ["no runs yet"];
  const rows = runs.map((r) => [
    formatWithZone(r.scheduledAt, tz),
    r.status,
    r.trigger,
    r.missed ? String(r.missed) : "-",
    r.finishedAt !== null ? formatWithZone(r.finishedAt, tz) : "-",
    [r.reply, r.note].filter(Boolean).join(" — ") || "",
  ]);
  return table(["SCHEDULED", "STATUS", "TRIGGER", "MISSED", "FINISHED", "REPLY / NOTE"], rows);
}

export async function cronListCommand(paths: DataPaths): Promise<number> {
  const { jobs, corrupt } = await withCron(paths, (c) => c.get<{ jobs: CronJob[]; corrupt?: CorruptRecord[] }>("/api/cron/jobs"), (s) => s.listing());
  for (const line of jobListLines(jobs)) console.log(line);
  for (const line of corruptLines(corrupt)) console.error(line);
  if (corrupt?.some((c) => c.sublevel === "cron")) console.error("troupe cron remove ID removes a job whose record does not read");
  if (corrupt?.some((c) => c.sublevel === "meta")) console.error("Dream's record does not read: Dream replaces it with a new one when it next runs (troupe dream run runs it now)");
  return 0;
}

export async function cronAddCommand(paths: DataPaths, req: AddJobRequest): Promise<number> {
  // Checked here too, so a mistake is named the same way with or without a daemon.
  try {
    addJobInput(req);
  } catch (err) {
    if (err instanceof ScheduleError) throw new TroupeError(`troupe cron add: ${err.message}`);
    throw err;
  }
  const job = await withCron(
    paths,
    async (c) => (await c.post<{ job: CronJob }>("/api/cron/jobs", req)).job,
    async (s) => {
      try {
        return await s.add(addJobInput(req));
      } catch (err) {
        if (err instanceof ScheduleError) throw new TroupeError(`troupe cron add: ${err.message}`);
        throw err;
      }
    },
  ).catch((err: Error) => {
    throw new TroupeError(err.message.replace(/^daemon answered 400: /, "troupe cron add: "));
  });
  const where = job.deliver ? `replies go to ${job.target.channel}:${job.target.chatId}` : `replies stay in session cron:${job.id} (give --channel and --to to deliver them)`;
  console.log(`added job ${job.id} (${printable(job.name)}), ${describeSchedule(job.schedule)}; ${where}`);
  return 0;
}

export async function cronRemoveCommand(paths: DataPaths, id: string): Promise<number> {
  const result = await withCron(
    paths,
    async (c) =>
      c.delete<{ removed: string }>(`/api/cron/jobs/${enc(id)}`).then(
        () => "removed" as const,
        (err: Error) => (/\b409\b/.test(err.message) ? ("protected" as const) : unlessMissing(err)),
      ),
    (s) => s.remove(id),
  );
  if (result === "missing" || result === undefined) throw noJob(id);
  if (result === "protected") throw new TroupeError(id === "dream" ? DREAM_REFUSALS.remove : `${id} is a protected system job and cannot be removed; troupe cron disable ${id} pauses it`);
  console.log(`removed job ${id}`);
  return 0;
}

export async function cronEnableCommand(paths: DataPaths, id: string, enabled: boolean): Promise<number> {
  const job = await withCron(
    paths,
    async (c) => (await c.post<{ job: CronJob }>(`/api/cron/jobs/${enc(id)}/${enabled ? "enable" : "disable"}`).catch(unlessMissing))?.job,
    (s) => s.setEnabled(id, enabled),
  );
  if (!job) throw noJob(id);
  console.log(`job ${id} ${enabled ? `enabled; next run ${job.nextRunAt !== null ? formatWithZone(job.nextRunAt, tzOf(job)) : "none"}` : "disabled"}`);
  return 0;
}

/** `troupe cron run ID`: now. Without a daemon the run is recorded and its turn runs when the gateway starts. */
export async function cronRunCommand(paths: DataPaths, id: string): Promise<number> {
  let viaDaemon = false;
  const run = await withCron(
    paths,
    async (c) => {
      viaDaemon = true;
      return (await c.post<{ run: CronRun }>(`/api/cron/jobs/${enc(id)}/run`).catch(unlessMissing))?.run;
    },
    async (s, store) => {
      await s.checkRun(id);
      return (await fireNow(store, id, Date.now()))?.run;
    },
  );
  if (!run) throw noJob(id);
  console.log(viaDaemon ? `job ${id} started; troupe cron runs ${id} shows how it ends` : `job ${id} queued: no daemon runs, so it runs when the gateway starts (troupe daemon start)`);
  return 0;
}

export async function cronRunsCommand(paths: DataPaths, id: string): Promise<number> {
  const found = await withCron(
    paths,
    async (c) => {
      const runs = (await c.get<{ runs: CronRun[] }>(`/api/cron/jobs/${enc(id)}/runs`).catch(unlessMissing))?.runs;
      const job = (await c.get<{ jobs: CronJob[] }>("/api/cron/jobs")).jobs.find((j) => j.id === id);
      return runs && { runs, job };
    },
    async (s) => {
      const [job, runs] = [await s.get(id), await s.runs(id)];
      return job || runs.length ? { runs, job } : undefined;
    },
  );
  if (!found) throw noJob(id);
  for (const line of runLines(found.runs, found.job ? tzOf(found.job) : "UTC")) console.log(line);
  return 0;
}
