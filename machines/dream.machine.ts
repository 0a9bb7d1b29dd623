import { assign, setup, type PromiseActorLogic } from "xstate";
import { notProvided } from "./not-provided.js";
import type { DreamRecord, DreamRun } from "../src/memory/dream-record.js";

/**
 * Dream, the supervisor's protected memory job (DESIGN.md, "The actor tree"). `idle` waits for the
 * stored deadline (or a `run` event: /dream); a run goes `starting → analysing → editing →
 * committing` and back to `idle`. Every phase's actor stores the next phase in LevelDB before it
 * ends, so `loading` (at start, after a crash) resumes a run at the phase it was in, and the
 * deadline, kept in the same record, survives restarts. A failed phase waits `retryMs` (or until
 * the next /dream) and then resumes the same run.
 */

export interface DreamContext {
  record: DreamRecord | null;
  run: DreamRun | null;
  /** Runs ended (done or failed) since the actor started: /dream waits for this to move. */
  runs: number;
  lastResult: string | null;
  error: string | null;
  retryAt: number | null;
  retryMs: number;
}

export interface DreamInput {
  retryMs?: number;
}

export type DreamEvent = { type: "run" };

/** A timer longer than this fires at once in Node: long deadlines are waited for in steps. */
const MAX_TIMER_MS = 2_147_483_647;
const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

export const dreamMachine = setup({
  types: {
    context: {} as DreamContext,
    events: {} as DreamEvent,
    input: {} as DreamInput,
  },
  actors: {
    load: notProvided<PromiseActorLogic<DreamRecord>>("dream", "load"),
    begin: notProvided<PromiseActorLogic<DreamRun | undefined>>("dream", "begin"),
    analyse: notProvided<PromiseActorLogic<DreamRun, DreamRun>>("dream", "analyse"),
    edit: notProvided<PromiseActorLogic<DreamRun, DreamRun>>("dream", "edit"),
    commit: notProvided<PromiseActorLogic<DreamRecord, DreamRun>>("dream", "commit"),
  },
  delays: {
    untilDue: ({ context }) => Math.min(MAX_TIMER_MS, Math.max(0, (context.retryAt ?? context.record?.nextAt ?? 0) - Date.now())),
  },
  guards: {
    hasRun: ({ context }) => context.run !== null,
    isDue: ({ context }) => (context.retryAt ?? context.record?.nextAt ?? 0) <= Date.now(),
  },
  actions: {
    failed: assign(({ context, event }) => ({
      error: errorText((event as unknown as { error: unknown }).error),
      lastResult: `Dream failed: ${errorText((event as unknown as { error: unknown }).error)}`,
      runs: context.runs + 1,
      retryAt: Date.now() + context.retryMs,
    })),
  },
}).createMachine({
  id: "dream",
  context: ({ input }) => ({ record: null, run: null, runs: 0, lastResult: null, error: null, retryAt: null, retryMs: input.retryMs ?? 600_000 }),
  initial: "loading",
  states: {
    loading: {
      invoke: {
        src: "load",
        onDone: { target: "resuming", actions: assign(({ event }) => ({ record: event.output, run: event.output.run })) },
        onError: { target: "idle", actions: "failed" },
      },
    },
    resuming: {
      always: [
        { guard: ({ context }) => context.run?.phase === "analysing", target: "analysing" },
        { guard: ({ context }) => context.run?.phase === "editing", target: "editing" },
        { guard: ({ context }) => context.run?.phase === "committing", target: "committing" },
        { target: "idle" },
      ],
    },
    idle: {
      after: { untilDue: [{ guard: "isDue", target: "starting" }, { target: "idle", reenter: true }] },
      on: { run: "starting" },
    },
    starting: {
      entry: assign({ retryAt: null }),
      invoke: {
        src: "begin",
        onDone: [
          { guard: ({ event }) => event.output !== undefined, target: "analysing", actions: assign(({ event }) => ({ run: event.output ?? null })) },
          { target: "loading", actions: assign(({ context }) => ({ runs: context.runs + 1, lastResult: "nothing new to digest", error: null })) },
        ],
        onError: { target: "idle", actions: "failed" },
      },
    },
    analysing: {
      invoke: {
        src: "analyse",
        input: ({ context }) => context.run!,
        onDone: [
          { guard: ({ event }) => event.output.phase === "committing", target: "committing", actions: assign(({ event }) => ({ run: event.output })) },
          { target: "editing", actions: assign(({ event }) => ({ run: event.output })) },
        ],
        onError: { target: "idle", actions: "failed" },
      },
    },
    editing: {
      invoke: {
        src: "edit",
        input: ({ context }) => context.run!,
        onDone: { target: "committing", actions: assign(({ event }) => ({ run: event.output })) },
        onError: { target: "idle", actions: "failed" },
      },
    },
    committing: {
      invoke: {
        src: "commit",
        input: ({ context }) => context.run!,
        onDone: {
          target: "idle",
          actions: assign(({ context, event }) => ({ record: event.output, run: null, runs: context.runs + 1, lastResult: event.output.lastRun?.result ?? "done", error: null })),
        },
        onError: { target: "idle", actions: "failed" },
      },
    },
  },
});
export type DreamMachine = typeof dreamMachine;
