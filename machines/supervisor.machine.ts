import { enqueueActions, setup, type AnyActorRef, type CallbackActorLogic } from "xstate";
import { notProvided } from "./not-provided.js";
import type { SessionInput, SessionMessage } from "./session.machine.js";

/**
 * The root of the actor system (DESIGN.md, "Supervision"). It owns the channel actors and the
 * session actors. A child that fails is restarted after an exponential backoff; past the intensity
 * limit (maxRestarts failures within windowMs) it is marked failed and left stopped, and the rest
 * keep running. Sessions are spawned on their first message and removed when they passivate;
 * messages that arrive while a session waits to restart are kept and handed to the new one.
 */

export interface SupervisionPolicy {
  maxRestarts: number;
  windowMs: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_POLICY: SupervisionPolicy = { maxRestarts: 5, windowMs: 60_000, baseDelayMs: 500, maxDelayMs: 30_000 };

export type ChildKind = "session" | "channel";

export interface ChildRecord {
  id: string;
  kind: ChildKind;
  input: unknown;
  status: "running" | "restarting" | "failed";
  /** When it failed, within the intensity window. */
  failures: number[];
  lastError: string | null;
  since: number;
  /** Messages for a session that is waiting to restart. */
  pending: SessionMessage[];
}

export interface SupervisorInput {
  policy?: Partial<SupervisionPolicy>;
  sessionIdleMs: number;
}

export interface SupervisorContext {
  policy: SupervisionPolicy;
  sessionIdleMs: number;
  children: Record<string, ChildRecord>;
}

export type SupervisorEvent =
  | { type: "channel.start"; name: string; input?: unknown }
  | { type: "inbound"; sessionKey: string; message: SessionMessage }
  /** Start a session that has work waiting in LevelDB (recovery at daemon start). */
  | { type: "wake"; sessionKey: string }
  | { type: "child.restart"; id: string };

export const sessionActorId = (sessionKey: string) => `session:${sessionKey}`;
export const channelActorId = (name: string) => `channel:${name}`;

/** The wait before restart number `attempt` (1-based): base × 2^(attempt-1), capped. */
export const restartDelay = (policy: SupervisionPolicy, attempt: number) =>
  Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1));

const ERROR_PREFIX = "xstate.error.actor.";
const DONE_PREFIX = "xstate.done.actor.";

const isActive = (ref: AnyActorRef | undefined) => ref?.getSnapshot().status === "active";

export const supervisorMachine = setup({
  types: {
    context: {} as SupervisorContext,
    events: {} as SupervisorEvent,
    input: {} as SupervisorInput,
  },
  actors: {
    session: notProvided<CallbackActorLogic<{ type: "message"; message: SessionMessage }, SessionInput>>("supervisor", "session", "callback"),
    channel: notProvided<CallbackActorLogic<{ type: string }, unknown>>("supervisor", "channel", "callback"),
  },
  actions: {
    /** Delivers a message to its session actor, spawning it first if it is not running; wake only spawns. */
    route: enqueueActions(({ enqueue, event, context, self }) => {
      if (event.type !== "inbound" && event.type !== "wake") return;
      const message = event.type === "inbound" ? event.message : undefined;
      const id = sessionActorId(event.sessionKey);
      const record = context.children[id];
      if (record?.status === "failed") {
        // (setup's own actions cannot name their siblings in the types; the call is checked at runtime.)
        if (message) enqueue({ type: "rejectMessage", params: { sessionKey: event.sessionKey, message, reason: record.lastError ?? "it failed repeatedly" } } as never);
        return;
      }
      if (record?.status === "restarting") {
        if (message) enqueue.assign({ children: { ...context.children, [id]: { ...record, pending: [...record.pending, message] } } });
        return;
      }
      const ref = self.getSnapshot().children[id] as AnyActorRef | undefined;
      if (!isActive(ref)) {
        // First message, or the session passivated an instant ago: a fresh actor.
        if (ref) enqueue.stopChild(id);
        const input: SessionInput = { sessionKey: event.sessionKey, idleMs: context.sessionIdleMs };
        enqueue.spawnChild("session", { id, input });
        enqueue.assign({
          children: {
            ...context.children,
            [id]: { id, kind: "session", input, status: "running", failures: record?.failures ?? [], lastError: null, since: Date.now(), pending: [] },
          },
        });
      }
      if (message) enqueue.sendTo(id, { type: "message", message });
    }),
    /** A child failed: restart it after a backoff, or past the intensity limit mark it failed. */
    childFailure: enqueueActions(({ enqueue, context }, { id, error }: { id: string; error: unknown }) => {
      const record = context.children[id];
      if (!record) return;
      const now = Date.now();
      const failures = [...record.failures.filter((t: number) => now - t < context.policy.windowMs), now];
      const lastError = error instanceof Error ? error.message : String(error);
      enqueue.stopChild(id);
      // An error that says restarting cannot help (a rejected token) fails the child at once.
      const permanent = (error as { permanent?: unknown } | undefined)?.permanent === true;
      if (permanent || failures.length > context.policy.maxRestarts) {
        enqueue.assign({ children: { ...context.children, [id]: { ...record, status: "failed", failures, lastError, since: now } } });
        enqueue({ type: "childFailed", params: { id, error: lastError } } as never);
        return;
      }
      enqueue.assign({ children: { ...context.children, [id]: { ...record, status: "restarting", failures, lastError, since: now } } });
      enqueue({ type: "childRestarting", params: { id, error: lastError, restarts: failures.length, delayMs: restartDelay(context.policy, failures.length) } } as never);
      enqueue.raise({ type: "child.restart", id } as SupervisorEvent, { delay: restartDelay(context.policy, failures.length) });
    }),
    /** A message for a session that has failed for good: tell the sender. Supplied by the composition. */
    rejectMessage: (_, _params: { sessionKey: string; message: SessionMessage; reason: string }) => {},
    /** A child failed and restarts after a backoff. Supplied by the composition (logs it). */
    childRestarting: (_, _params: { id: string; error: string; restarts: number; delayMs: number }) => {},
    /** A child passed the intensity limit. Supplied by the composition (logs it). */
    childFailed: (_, _params: { id: string; error: string }) => {},
  },
}).createMachine({
  id: "supervisor",
  context: ({ input }) => ({ policy: { ...DEFAULT_POLICY, ...input.policy }, sessionIdleMs: input.sessionIdleMs, children: {} }),
  initial: "running",
  states: {
    running: {
      on: {
        "channel.start": {
          actions: enqueueActions(({ enqueue, event, context }) => {
            const id = channelActorId(event.name);
            if (context.children[id]) return;
            const input = event.input ?? { name: event.name };
            enqueue.spawnChild("channel", { id, input });
            enqueue.assign({
              children: { ...context.children, [id]: { id, kind: "channel", input, status: "running", failures: [], lastError: null, since: Date.now(), pending: [] } },
            });
          }),
        },
        inbound: { actions: "route" },
        wake: { actions: "route" },
        "child.restart": {
          actions: enqueueActions(({ enqueue, event, context }) => {
            const record = context.children[event.id];
            if (record?.status !== "restarting") return;
            const input = record.kind === "session" ? { ...(record.input as SessionInput), queue: record.pending } : record.input;
            enqueue.spawnChild(record.kind, { id: record.id, input: input as SessionInput });
            enqueue.assign({ children: { ...context.children, [record.id]: { ...record, status: "running", since: Date.now(), pending: [] } } });
          }),
        },
        "xstate.error.actor.*": {
          actions: enqueueActions(({ enqueue, event }) => {
            const error = (event as unknown as { error: unknown }).error;
            enqueue({ type: "childFailure", params: { id: event.type.slice(ERROR_PREFIX.length), error } } as never);
          }),
        },
        "xstate.done.actor.*": {
          // A session passivated: it goes, and comes back on its next message.
          actions: enqueueActions(({ enqueue, event, context, self }) => {
            const id = event.type.slice(DONE_PREFIX.length);
            const record = context.children[id];
            if (record?.kind !== "session" || record.status !== "running") return;
            // A session that ended as crashed (its children stopped with it) is a failure like any other.
            const crash = (event as unknown as { output?: { error?: string | null } }).output?.error;
            if (crash) return enqueue({ type: "childFailure", params: { id, error: new Error(crash) } } as never);
            // Already replaced by a fresh actor for a message that came meanwhile.
            if (isActive(self.getSnapshot().children[id] as AnyActorRef | undefined)) return;
            enqueue.stopChild(id);
            const children = { ...context.children };
            delete children[id];
            enqueue.assign({ children });
          }),
        },
      },
    },
  },
});
