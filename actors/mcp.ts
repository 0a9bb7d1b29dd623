import { createActor, fromCallback, fromPromise, type AnyActorRef } from "xstate";
import { mcpMachine, type McpConnected, type McpPolicy, type McpState } from "../machines/mcp.machine.js";
import type { McpHub } from "../src/mcp/hub.js";

export const mcpActorId = (server: string) => `mcp:${server}`;

export interface McpActorDeps {
  hub: McpHub;
  /** Besides the hub: the supervisor hears of a server that failed for good. */
  onState?: (name: string, state: McpState, error: string | null) => void;
}

/** The server machine with its effects: connect and watch through the hub, states reported to it. */
export function createMcpLogic(deps: McpActorDeps) {
  return mcpMachine.provide({
    actors: {
      connect: fromPromise<McpConnected, { name: string }>(({ input, signal }) => deps.hub.connect(input.name, signal)),
      watch: fromCallback<{ type: "lost"; error: string }, { name: string }>(({ input, sendBack }) =>
        deps.hub.watch(input.name, (error) => sendBack({ type: "lost", error: error.message })),
      ),
    },
    actions: {
      report: (_, { name, state, error }) => {
        deps.hub.report(name, state, error);
        deps.onState?.(name, state, error);
      },
    },
  });
}

/** One server's actor started on its own, unsupervised (`troupe agent`; the daemon spawns them under its supervisor). */
export function startMcpActor(hub: McpHub, name: string, policy: McpPolicy): AnyActorRef {
  return createActor(createMcpLogic({ hub }), { id: mcpActorId(name), input: { name, policy } }).start();
}

export type { McpPolicy };
