import type { Logger } from "pino";
import { createActor, type Actor, type AnyActorLogic } from "xstate";
import { supervisorMachine, type SupervisorInput } from "../machines/supervisor.machine.js";
import type { SessionMessage } from "../machines/session.machine.js";
import type { McpHub } from "../src/mcp/hub.js";
import type * as McpActor from "./mcp.js";
import type { SessionHost } from "./session-host.js";

export type SupervisorActor = Actor<typeof supervisorMachine>;

export interface SupervisorDeps {
  logger: Logger;
  /** The store is failing: a session that crashes now is parked, not restarted. */
  storeDown: () => boolean;
  sessions: Pick<SessionHost, "provided">;
  channel: AnyActorLogic;
  cron: AnyActorLogic;
  dream: AnyActorLogic;
  /** The configured MCP servers' hub and actor module (loaded only when there are servers). */
  mcp?: { hub: McpHub; actor: typeof McpActor };
  /** An answer that needs no turn (see sessionNotices). */
  notice: (sessionKey: string, message: SessionMessage, text: string) => unknown;
  input: SupervisorInput;
}

/** The supervisor machine with the daemon's children, guards and actions: the daemon's root actor, created and not started. */
export function createSupervisor(deps: SupervisorDeps): SupervisorActor {
  const { logger, sessions, mcp, notice } = deps;
  const supervisor = createActor(
    supervisorMachine.provide({
      guards: { storeDown: deps.storeDown, ...sessions.provided.guards },
      actors: {
        channel: deps.channel as never,
        cron: deps.cron as never,
        ...(mcp && {
          mcp: mcp.actor.createMcpLogic({
            hub: mcp.hub,
            onState: (name, state, error) => {
              if (state === "failed") supervisor.send({ type: "child.failed", id: mcp.actor.mcpActorId(name), error: error ?? "failed" });
            },
          }) as never,
        }),
        dream: deps.dream as never,
      },
      actions: {
        ...sessions.provided.actions,
        rejectMessage: (_, { sessionKey, message, reason }) => void notice(sessionKey, message, `This session is unavailable: it failed repeatedly (${reason}). Restart troupe to try again.`),
        childFailed: (_, { id, error }) => logger.error({ actor: id, error }, "actor failed past its restart limit; marked failed"),
        childRestarting: (_, { id, error, restarts, delayMs }) => logger.warn({ actor: id, error, restarts, delayMs }, "actor failed; restarting"),
      },
    }),
    { input: deps.input },
  );
  supervisor.subscribe({ error: (err) => logger.fatal({ err }, "supervisor failed") });
  return supervisor;
}
