import { assign, setup, type CallbackActorLogic, type PromiseActorLogic } from "xstate";
import { notProvided } from "./not-provided.js";

/**
 * One MCP server. `connecting` starts the transport, initializes and lists the server's tools;
 * `ready` watches the connection; a failed attempt or a lost connection goes to `reconnecting`,
 * which waits an exponential backoff before connecting again. More than `maxRestarts` failures
 * within `windowMs` (the supervisor's intensity limit) end in `failed`, where the server stays
 * while the daemon and the other servers keep running.
 */

export type McpState = "connecting" | "ready" | "reconnecting" | "failed";

export interface McpPolicy {
  maxRestarts: number;
  windowMs: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export interface McpInput {
  name: string;
  policy: McpPolicy;
}

export interface McpContext extends McpInput {
  failures: number[];
  lastError: string | null;
  tools: number;
}

export interface McpConnected {
  tools: number;
}

type Lost = { type: "lost"; error: string };

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

export const mcpMachine = setup({
  types: {
    context: {} as McpContext,
    input: {} as McpInput,
    events: {} as Lost,
  },
  actors: {
    /** Opens the connection and registers the server's tools; resolves with how many. */
    connect: notProvided<PromiseActorLogic<McpConnected, { name: string }>>("mcp", "connect"),
    /** Sends `lost` when the connection goes (process exit, closed stream, "Session terminated"). */
    watch: notProvided<CallbackActorLogic<Lost, { name: string }>>("mcp", "watch", "callback"),
  },
  guards: {
    pastLimit: ({ context }) => context.failures.length > context.policy.maxRestarts,
  },
  delays: {
    backoff: ({ context }) => Math.min(context.policy.maxDelayMs, context.policy.baseDelayMs * 2 ** Math.max(0, context.failures.length - 1)),
  },
  actions: {
    recordFailure: assign(({ context, event }) => {
      const now = Date.now();
      const error = "error" in event ? messageOf(event.error) : "unknown error";
      return { failures: [...context.failures.filter((t) => now - t < context.policy.windowMs), now], lastError: error };
    }),
    /** Each state entered, for the hub (tool calls name it) and the supervisor. Supplied by the composition. */
    report: (_, _params: { name: string; state: McpState; error: string | null }) => {},
  },
}).createMachine({
  id: "mcp",
  context: ({ input }) => ({ ...input, failures: [], lastError: null, tools: 0 }),
  initial: "connecting",
  states: {
    connecting: {
      entry: { type: "report", params: ({ context }) => ({ name: context.name, state: "connecting" as const, error: context.lastError }) },
      invoke: {
        src: "connect",
        input: ({ context }) => ({ name: context.name }),
        onDone: { target: "ready", actions: assign({ tools: ({ event }) => event.output.tools }) },
        onError: { target: "checking", actions: "recordFailure" },
      },
    },
    ready: {
      entry: { type: "report", params: ({ context }) => ({ name: context.name, state: "ready" as const, error: null }) },
      invoke: { src: "watch", input: ({ context }) => ({ name: context.name }) },
      on: { lost: { target: "checking", actions: "recordFailure" } },
    },
    /** Past the intensity limit, or try again. */
    checking: {
      always: [{ guard: "pastLimit", target: "failed" }, { target: "reconnecting" }],
    },
    reconnecting: {
      entry: { type: "report", params: ({ context }) => ({ name: context.name, state: "reconnecting" as const, error: context.lastError }) },
      after: { backoff: "connecting" },
    },
    failed: {
      entry: { type: "report", params: ({ context }) => ({ name: context.name, state: "failed" as const, error: context.lastError }) },
    },
  },
});
