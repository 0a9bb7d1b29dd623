import { DREAM_REFUSALS } from "../cron/dream-job.js";
import { addJobInput, addJobRequestSchema } from "../cron/requests.js";
import { ScheduleError } from "../cron/schedule.js";
import { CronJobRefusal } from "../cron/jobs.js";
import type { Daemon } from "../daemon-types.js";
import { pathSegment } from "./request-io.js";

/** A cron request the control API refuses, with its status. */
export class CronRouteError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const ROUTE = /^\/api\/cron\/jobs(?:\/([^/]+)(\/enable|\/disable|\/run|\/runs)?)?$/;

/**
 * The control API's cron routes (what `troupe cron` uses while the daemon runs):
 * GET/POST /api/cron/jobs, DELETE /api/cron/jobs/:id, POST /api/cron/jobs/:id/{enable,disable,run},
 * GET /api/cron/jobs/:id/runs. undefined: not a cron route.
 */
export async function cronRoute(daemon: Daemon, method: string, path: string, body: () => Promise<unknown>): Promise<{ status: number; body: unknown } | undefined> {
  return answer(daemon, method, path, body).catch((err: unknown) => {
    throw err instanceof CronJobRefusal ? new CronRouteError(409, err.message) : err;
  });
}

async function answer(daemon: Daemon, method: string, path: string, body: () => Promise<unknown>): Promise<{ status: number; body: unknown } | undefined> {
  const m = ROUTE.exec(path);
  if (!m) return undefined;
  const id = m[1] === undefined ? undefined : pathSegment(m[1]);
  const action = m[2];
  const { cron } = daemon;
  const missing = () => new CronRouteError(404, `no cron job ${id}; troupe cron list shows them`);
  if (!id) {
    if (method === "GET") return { status: 200, body: await cron.listing() };
    if (method === "POST") {
      const parsed = addJobRequestSchema.safeParse(await body());
      if (!parsed.success) throw new CronRouteError(400, parsed.error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`).join("; "));
      try {
        return { status: 201, body: { job: await cron.add(addJobInput(parsed.data)) } };
      } catch (err) {
        if (err instanceof ScheduleError) throw new CronRouteError(400, err.message);
        throw err;
      }
    }
  } else if (!action && method === "DELETE") {
    const result = await cron.remove(id);
    if (result === "missing") throw missing();
    if (result === "protected") throw new CronRouteError(409, id === "dream" ? DREAM_REFUSALS.remove : `${id} is a protected system job; it cannot be removed (troupe cron disable ${id} pauses it)`);
    return { status: 200, body: { removed: id } };
  } else if ((action === "/enable" || action === "/disable") && method === "POST") {
    const job = await cron.setEnabled(id, action === "/enable");
    if (!job) throw missing();
    return { status: 200, body: { job } };
  } else if (action === "/run" && method === "POST") {
    await cron.checkRun(id);
    const started = await daemon.runCronJob(id);
    if (!started) throw missing();
    return { status: 200, body: { run: started.run } };
  } else if (action === "/runs" && method === "GET") {
    if (!(await cron.get(id))) {
      const runs = await cron.runs(id);
      if (!runs.length) throw missing();
      return { status: 200, body: { runs } };
    }
    return { status: 200, body: { runs: await cron.runs(id) } };
  }
  throw new CronRouteError(405, `${method} is not allowed on ${path}`);
}
