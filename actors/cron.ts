import { fromPromise } from "xstate";
import type { Logger } from "pino";
import { cronMachine, type FireOutput } from "../machines/cron.machine.js";
import { fireDue, type StartedRun } from "../src/cron/fire.js";
import type { Store } from "../src/store/store.js";

/** Longest sleep between firings: a clock that jumps (a suspended laptop) is noticed within it. */
export const MAX_WAIT_MS = 60_000;

export interface CronSchedulerDeps {
  store: Store;
  logger?: Logger;
  now?: () => number;
  /** Starts a recorded run: hands its message to its session, or runs a system job's handler. */
  start(run: StartedRun): void;
}

/** The cron machine with its effect: fire what is due (recorded before started), then sleep until the next. */
export function createCronScheduler(deps: CronSchedulerDeps) {
  const now = deps.now ?? Date.now;
  const fire = fromPromise<FireOutput, { startedAt: number }>(async ({ input }) => {
    const at = now();
    const result = await fireDue(deps.store, at, input.startedAt, (msg, data) => deps.logger?.warn(data, msg));
    for (const s of result.started) {
      deps.logger?.info({ jobId: s.job.id, scheduledAt: new Date(s.run.scheduledAt).toISOString(), missed: s.run.missed }, "cron run started");
      deps.start(s);
    }
    const waitMs = result.nextAt === null ? MAX_WAIT_MS : Math.min(MAX_WAIT_MS, Math.max(0, result.nextAt - now()));
    return { waitMs, started: result.started.length };
  });
  return cronMachine.provide({ actors: { fireDue: fire } });
}
