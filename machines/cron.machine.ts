import { assign, setup, type PromiseActorLogic } from "xstate";
import { notProvided } from "./not-provided.js";

/**
 * The cron scheduler (DESIGN.md, "Durability rules"). Its deadlines live in LevelDB, never only in a
 * timer: `firing` reads the jobs, records and starts every due run (the actor supplied for it writes
 * each run synced before it starts) and says how long to wait for the next one; `waiting` sleeps that
 * long. At start, and after a restart by the supervisor, it begins in `firing`: the next deadline is
 * re-armed from the store. A change to the jobs (added, removed, enabled, run by hand) wakes it.
 */

export interface CronSchedulerInput {
  /** When the daemon started: instants before it were missed (each job's catchUp decides). */
  startedAt: number;
}

export interface FireOutput {
  /** How long to sleep before firing again. */
  waitMs: number;
  started: number;
}

export interface CronSchedulerContext {
  startedAt: number;
  waitMs: number;
  /** Jobs changed while firing: fire again at once. */
  dirty: boolean;
  firings: number;
}

export type CronSchedulerEvent = { type: "jobs.changed" };

export const cronMachine = setup({
  types: {
    context: {} as CronSchedulerContext,
    events: {} as CronSchedulerEvent,
    input: {} as CronSchedulerInput,
  },
  actors: {
    /** Fires what is due (each run recorded, synced, before it starts); resolves with the wait until the next. */
    fireDue: notProvided<PromiseActorLogic<FireOutput, { startedAt: number }>>("cron", "fireDue"),
  },
  delays: {
    untilNext: ({ context }) => context.waitMs,
  },
}).createMachine({
  id: "cron",
  context: ({ input }) => ({ startedAt: input.startedAt, waitMs: 0, dirty: false, firings: 0 }),
  initial: "firing",
  states: {
    firing: {
      entry: assign({ dirty: false }),
      // A store failure fails the actor: the supervisor restarts it, and it re-arms from the store.
      invoke: {
        src: "fireDue",
        input: ({ context }) => ({ startedAt: context.startedAt }),
        onDone: [
          { guard: ({ context }) => context.dirty, target: "firing", reenter: true, actions: assign({ firings: ({ context }) => context.firings + 1 }) },
          { target: "waiting", actions: assign({ waitMs: ({ event }) => event.output.waitMs, firings: ({ context }) => context.firings + 1 }) },
        ],
      },
      on: { "jobs.changed": { actions: assign({ dirty: true }) } },
    },
    waiting: {
      after: { untilNext: "firing" },
      on: { "jobs.changed": "firing" },
    },
  },
});
