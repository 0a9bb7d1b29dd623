import { enqueueActions, setup, type AnyActorRef, type CallbackActorLogic } from "xstate";
import { notProvided } from "./not-provided.js";
import type { SessionInput, SessionMessage } from "./session.machine.js";
import { channelActorId, CRON_ACTOR_ID, DEFAULT_POLICY, DREAM_ACTOR_ID, mcpServerActorId, restartDelay, sessionActorId, type ChildRecord, type SupervisionPolicy } from "./supervision.js";

/**
 * The root of the actor system (DESIGN.md, "Supervision"). It owns the channel actors and the
 * session actors. A child that fails is restarted after an exponential backoff; past the intensity
 * limit (maxRestarts failures within windowMs) it is marked failed and left stopped, and the rest
 * keep running. Sessions are spawned on their first message and removed when they passivate;
 * messages that arrive while a session waits to restart are kept and handed to the new one.
 *
 * Session actors are not XState children: each is the root of its own actor system, kept by the
 * session host (actors/session-host.ts) that the composition plugs in as the `startSession`,
 * `stopSession` and `deliverToSession` actions and the `sessionActive`/`sessionIdle` guards, and
 * that reports their ends as `session.done` / `session.error`. Channels, cron, MCP servers and
 * Dream are few and stay real children.
 */

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
  | { type: "child.restart"; id: string }
  /** Starts the cron scheduler (once); `cron.changed` tells it the jobs changed. */
  | { type: "cron.start"; startedAt: number }
  | { type: "cron.changed" }
  /** An MCP server's actor: spawned once; it reconnects by itself and reports when it gives up. */
  | { type: "mcp.start"; name: string; input: unknown }
  /** A child that stays alive in a failed state (an MCP server past its limit) is shown as failed. */
  | { type: "child.failed"; id: string; error: string }
  /**
   * The store is writable again after a failure: parked sessions start again (resuming their turns),
   * and idle sessions are started afresh so they read what their inbox kept (messages whose answer
   * could not be stored).
   */
  | { type: "store.recovered" }
  /** A session actor ended by itself: passivated, or crashed (its output names the error). */
  | { type: "session.done"; id: string; output: unknown }
  /** A session actor threw. */
  | { type: "session.error"; id: string; error: unknown }
  /** Start Dream, the protected memory job (one per daemon). */
  | { type: "dream.start" };

const ERROR_PREFIX = "xstate.error.actor.";

const isActive = (ref: AnyActorRef | undefined) => ref?.getSnapshot().status === "active";

/**
 * The children's records are updated in place: copying the whole map on every spawn and every
 * passivation made a burst of sessions quadratic. Nothing holds an older version of the map.
 */
const withChild = (children: Record<string, ChildRecord>, record: ChildRecord) => {
  children[record.id] = record;
  return children;
};
const withoutChild = (children: Record<string, ChildRecord>, id: string) => {
  delete children[id];
  return children;
};

export const supervisorMachine = setup({
  types: {
    context: {} as SupervisorContext,
    events: {} as SupervisorEvent,
    input: {} as SupervisorInput,
  },
  actors: {
    channel: notProvided<CallbackActorLogic<{ type: string }, unknown>>("supervisor", "channel", "callback"),
    /** The cron scheduler (machines/cron.machine.ts, provided by the composition). */
    cron: notProvided<CallbackActorLogic<{ type: string }, unknown>>("supervisor", "cron", "callback"),
    mcp: notProvided<CallbackActorLogic<{ type: string }, unknown>>("supervisor", "mcp", "callback"),
    dream: notProvided<CallbackActorLogic<{ type: string }, unknown>>("supervisor", "dream", "callback"),
  },
  guards: {
    /** The store is failing (supplied by the composition). */
    storeDown: () => false,
    /** The session host (supplied by the composition) has a live actor for this id (params: { id }). */
    sessionActive: (_, _params: unknown) => false,
    /** …and it waits for a message (params: { id }). (Typed unknown: params typed here do not resolve inside setup's own actions.) */
    sessionIdle: (_, _params: unknown) => false,
  },
  actions: {
    /** Delivers a message to its session actor, spawning it first if it is not running; wake only spawns. */
    route: enqueueActions(({ enqueue, event, context, check }) => {
      if (event.type !== "inbound" && event.type !== "wake") return;
      const message = event.type === "inbound" ? event.message : undefined;
      const id = sessionActorId(event.sessionKey);
      const record = context.children[id];
      if (record?.status === "failed") {
        // (setup's own actions cannot name their siblings in the types; the call is checked at runtime.)
        if (message) enqueue({ type: "rejectMessage", params: { sessionKey: event.sessionKey, message, reason: record.lastError ?? "it failed repeatedly" } } as never);
        return;
      }
      if (record?.status === "restarting" || record?.status === "parked") {
        if (message) enqueue.assign({ children: withChild(context.children, { ...record, pending: [...record.pending, message] }) });
        return;
      }
      if (!check({ type: "sessionActive", params: { id } })) {
        // First message, or the session passivated an instant ago: a fresh actor (replacing any stopped one).
        // The message comes with the start (no event to a session just started); the record keeps the
        // input without it, so a restart reads the message from the inbox, where it is until answered.
        const input: SessionInput = { sessionKey: event.sessionKey, idleMs: context.sessionIdleMs };
        enqueue({ type: "startSession", params: { id, input: message ? { ...input, first: message } : input } } as never);
        enqueue.assign({
          children: withChild(context.children, { id, kind: "session", input, status: "running", failures: record?.failures ?? [], lastError: null, since: Date.now(), pending: [] }),
        });
        return;
      }
      if (message) enqueue({ type: "deliverToSession", params: { id, message } } as never);
    }),
    /** A child failed: restart it after a backoff, or past the intensity limit mark it failed. */
    childFailure: enqueueActions(({ enqueue, context, check }, { id, error }: { id: string; error: unknown }) => {
      const record = context.children[id];
      if (!record) return;
      const now = Date.now();
      const stop = () => (record.kind === "session" ? enqueue({ type: "stopSession", params: { id } } as never) : enqueue.stopChild(id));
      // The store failed under it: restarting now would fail again. It waits for store.recovered; not a failure of its own.
      if (record.kind === "session" && check({ type: "storeDown" })) {
        stop();
        enqueue.assign({ children: { ...context.children, [id]: { ...record, status: "parked", lastError: error instanceof Error ? error.message : String(error), since: now } } });
        return;
      }
      const failures = [...record.failures.filter((t: number) => now - t < context.policy.windowMs), now];
      const lastError = error instanceof Error ? error.message : String(error);
      stop();
      // An error that says restarting cannot help (a rejected token) fails the child at once.
      const permanent = (error as { permanent?: unknown } | undefined)?.permanent === true;
      if (permanent || failures.length > context.policy.maxRestarts) {
        enqueue.assign({ children: withChild(context.children, { ...record, status: "failed", failures, lastError, since: now }) });
        enqueue({ type: "childFailed", params: { id, error: lastError } } as never);
        return;
      }
      enqueue.assign({ children: withChild(context.children, { ...record, status: "restarting", failures, lastError, since: now }) });
      enqueue({ type: "childRestarting", params: { id, error: lastError, restarts: failures.length, delayMs: restartDelay(context.policy, failures.length) } } as never);
      enqueue.raise({ type: "child.restart", id } as SupervisorEvent, { delay: restartDelay(context.policy, failures.length) });
    }),
    /** A parked or idle session after the store recovered: started again (parked ones with the messages kept for them). */
    restartAfterStore: enqueueActions(({ enqueue, context, check }) => {
      for (const record of Object.values(context.children)) {
        if (record.kind !== "session") continue;
        const idle = record.status === "running" && check({ type: "sessionIdle", params: { id: record.id } });
        if (record.status !== "parked" && !idle) continue;
        const input: SessionInput = { ...(record.input as SessionInput), queue: record.pending };
        enqueue({ type: "startSession", params: { id: record.id, input } } as never);
        enqueue.assign({ children: withChild(context.children, { ...record, status: "running", since: Date.now(), pending: [] }) });
      }
    }),
    /** Starts (or replaces) a session's actor. Supplied by the composition's session host. */
    startSession: (_, _params: { id: string; input: SessionInput }) => {},
    stopSession: (_, _params: { id: string }) => {},
    deliverToSession: (_, _params: { id: string; message: SessionMessage }) => {},
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
              children: withChild(context.children, { id, kind: "channel", input, status: "running", failures: [], lastError: null, since: Date.now(), pending: [] }),
            });
          }),
        },
        "cron.start": {
          actions: enqueueActions(({ enqueue, event, context }) => {
            if (context.children[CRON_ACTOR_ID]) return;
            const input = { startedAt: event.startedAt };
            enqueue.spawnChild("cron", { id: CRON_ACTOR_ID, input });
            enqueue.assign({
              children: withChild(context.children, { id: CRON_ACTOR_ID, kind: "cron", input, status: "running", failures: [], lastError: null, since: Date.now(), pending: [] }),
            });
          }),
        },
        "cron.changed": {
          actions: enqueueActions(({ enqueue, self }) => {
            if (isActive(self.getSnapshot().children[CRON_ACTOR_ID] as AnyActorRef | undefined)) enqueue.sendTo(CRON_ACTOR_ID, { type: "jobs.changed" });
          }),
        },
        "mcp.start": {
          actions: enqueueActions(({ enqueue, event, context }) => {
            const id = mcpServerActorId(event.name);
            if (context.children[id]) return;
            enqueue.spawnChild("mcp", { id, input: event.input });
            enqueue.assign({
              children: withChild(context.children, { id, kind: "mcp", input: event.input, status: "running", failures: [], lastError: null, since: Date.now(), pending: [] }),
            });
          }),
        },
        "child.failed": {
          actions: enqueueActions(({ enqueue, event, context }) => {
            const record = context.children[event.id];
            if (!record || record.status === "failed") return;
            enqueue.assign({ children: withChild(context.children, { ...record, status: "failed", lastError: event.error, since: Date.now() }) });
            enqueue({ type: "childFailed", params: { id: event.id, error: event.error } } as never);
          }),
        },
        "dream.start": {
          actions: enqueueActions(({ enqueue, context }) => {
            if (context.children[DREAM_ACTOR_ID]) return;
            enqueue.spawnChild("dream", { id: DREAM_ACTOR_ID, input: {} });
            enqueue.assign({
              children: withChild(context.children, { id: DREAM_ACTOR_ID, kind: "dream", input: {}, status: "running", failures: [], lastError: null, since: Date.now(), pending: [] }),
            });
          }),
        },
        inbound: { actions: "route" },
        wake: { actions: "route" },
        "store.recovered": { actions: "restartAfterStore" },
        "child.restart": {
          actions: enqueueActions(({ enqueue, event, context }) => {
            const record = context.children[event.id];
            if (record?.status !== "restarting") return;
            if (record.kind === "session") {
              enqueue({ type: "startSession", params: { id: record.id, input: { ...(record.input as SessionInput), queue: record.pending } } } as never);
            } else {
              enqueue.spawnChild(record.kind, { id: record.id, input: record.input });
            }
            enqueue.assign({ children: withChild(context.children, { ...record, status: "running", since: Date.now(), pending: [] }) });
          }),
        },
        "xstate.error.actor.*": {
          actions: enqueueActions(({ enqueue, event }) => {
            const error = (event as unknown as { error: unknown }).error;
            enqueue({ type: "childFailure", params: { id: event.type.slice(ERROR_PREFIX.length), error } } as never);
          }),
        },
        "session.error": {
          actions: enqueueActions(({ enqueue, event }) => enqueue({ type: "childFailure", params: { id: event.id, error: event.error } } as never)),
        },
        "session.done": {
          // A session passivated: it goes, and comes back on its next message.
          actions: enqueueActions(({ enqueue, event, context, check }) => {
            const record = context.children[event.id];
            if (record?.kind !== "session" || record.status !== "running") return;
            // A session that ended as crashed (its children stopped with it) is a failure like any other.
            const crash = (event.output as { error?: string | null } | undefined)?.error;
            if (crash) return enqueue({ type: "childFailure", params: { id: event.id, error: new Error(crash) } } as never);
            // Already replaced by a fresh actor for a message that came meanwhile.
            if (check({ type: "sessionActive", params: { id: event.id } })) return;
            enqueue.assign({ children: withoutChild(context.children, event.id) });
          }),
        },
      },
    },
  },
});
