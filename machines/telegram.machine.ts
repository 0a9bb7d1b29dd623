import { assign, setup, type PromiseActorLogic } from "xstate";
import { notProvided } from "./not-provided.js";

/**
 * Telegram long polling. `connecting` checks the token and registers the command menu; `polling`
 * runs one getUpdates round after another (each update is in the inbox before the offset moves
 * past it); errors back off exponentially; a rejected token (401) stops the poller for good.
 */

export interface PollerContext {
  failures: number;
  lastError: string | null;
  /** Set when the poller stopped for good. */
  fatal: string | null;
  maxBackoffMs: number;
  baseBackoffMs: number;
}

/** What the effects throw: the HTTP status tells the machine how to react. */
export interface PollError {
  status?: number;
  message: string;
}

const statusOf = (error: unknown) => (error as PollError | undefined)?.status;
const messageOf = (error: unknown) => (error instanceof Error ? error.message : String((error as PollError | undefined)?.message ?? error));

export const telegramPollerMachine = setup({
  types: {
    context: {} as PollerContext,
    input: {} as { baseBackoffMs?: number; maxBackoffMs?: number },
  },
  actors: {
    /** getMe and setMyCommands. */
    connect: notProvided<PromiseActorLogic<void, void>>("telegram", "connect"),
    /** One getUpdates round; resolves once its updates are in the inbox and the offset is stored. */
    poll: notProvided<PromiseActorLogic<number, void>>("telegram", "poll"),
  },
  guards: {
    unauthorized: ({ event }) => statusOf((event as { error?: unknown }).error) === 401,
  },
  delays: {
    backoff: ({ context }) => Math.min(context.maxBackoffMs, context.baseBackoffMs * 2 ** Math.max(0, context.failures - 1)),
  },
  actions: {
    recordFailure: assign({
      failures: ({ context }) => context.failures + 1,
      lastError: ({ event }) => {
        const error = (event as { error?: unknown }).error;
        const status = statusOf(error);
        // 409: another getUpdates client (or a webhook) holds this bot.
        return status === 409 ? `another poller is using this bot (409): ${messageOf(error)}` : messageOf(error);
      },
    }),
    recordFatal: assign({
      fatal: ({ event }) => `Telegram rejected the bot token (401): ${messageOf((event as { error?: unknown }).error)}. Check channels.telegram.token.`,
    }),
  },
}).createMachine({
  id: "telegram",
  context: ({ input }) => ({ failures: 0, lastError: null, fatal: null, baseBackoffMs: input.baseBackoffMs ?? 1_000, maxBackoffMs: input.maxBackoffMs ?? 60_000 }),
  initial: "connecting",
  states: {
    connecting: {
      invoke: {
        src: "connect",
        // Failures are counted until a poll succeeds: reconnecting alone does not reset the backoff.
        onDone: { target: "polling" },
        onError: [
          { guard: "unauthorized", target: "stopped", actions: "recordFatal" },
          { target: "backing_off", actions: "recordFailure" },
        ],
      },
    },
    polling: {
      invoke: {
        src: "poll",
        onDone: { target: "polling", reenter: true, actions: assign({ failures: 0, lastError: null }) },
        onError: [
          { guard: "unauthorized", target: "stopped", actions: "recordFatal" },
          { target: "backing_off", actions: "recordFailure" },
        ],
      },
    },
    backing_off: {
      after: { backoff: "connecting" },
    },
    stopped: { type: "final" },
  },
});
