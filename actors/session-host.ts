import { createActor, type AnyActorLogic, type AnyActorRef } from "xstate";
import type { SessionInput, SessionMessage } from "../machines/session.machine.js";

/** How a session actor ended, for the supervisor: passivated or crashed (`done`, with its output), or threw (`error`). */
export type SessionEnd = { type: "session.done"; id: string; output: unknown } | { type: "session.error"; id: string; error: unknown };

export interface SessionHostOptions {
  /** The session machine, with its actors provided. */
  logic: AnyActorLogic;
  /** Follows a session's actor system in the live tree (called before the actor starts). */
  follow?: (actor: AnyActorRef, id: string) => void;
  /** Called when the current actor of an id ends by itself (not when it is stopped or replaced). */
  onEnd: (end: SessionEnd) => void;
  /**
   * Called once for every session actor that is gone (ended, failed, stopped or replaced): gives back
   * what it held outside XState (its turn slot), which no exit action does for an actor that is stopped.
   */
  onGone?: (actor: AnyActorRef) => void;
}

/**
 * The live session actors, each the root of an actor system of its own, in a plain map the
 * supervisor drives through its `startSession`, `stopSession` and `deliverToSession` actions.
 *
 * Sessions used to be the supervisor's XState children; XState copies a parent's whole children
 * map on every spawn and stop, and scans every scheduled event of the system on every stop, so a
 * burst of N sessions cost O(N²). Here a spawn or a stop is O(1) and each session's timers live
 * in its own system. The supervisor keeps the records (restarts, backoff, parking) as before.
 */
export function createSessionHost(opts: SessionHostOptions) {
  const live = new Map<string, AnyActorRef>();

  function stop(id: string) {
    const actor = live.get(id);
    if (!actor) return;
    live.delete(id);
    actor.stop();
  }

  function start(id: string, input: SessionInput) {
    stop(id);
    const actor = createActor(opts.logic, { id, input });
    opts.follow?.(actor, id);
    live.set(id, actor);
    const ended = (end: SessionEnd) => {
      // A replaced or stopped actor's end is not news: its successor (or nobody) owns the id now.
      if (live.get(id) !== actor) return;
      live.delete(id);
      opts.onEnd(end);
    };
    actor.subscribe({
      complete: () => {
        opts.onGone?.(actor);
        const snapshot = actor.getSnapshot() as { status: string; output?: unknown };
        if (snapshot.status === "done") ended({ type: "session.done", id, output: snapshot.output });
      },
      error: (error) => {
        opts.onGone?.(actor);
        ended({ type: "session.error", id, error });
      },
    });
    actor.start();
  }

  const active = (id: string) => live.get(id)?.getSnapshot().status === "active";
  const idle = (id: string) => active(id) && live.get(id)!.getSnapshot().value === "idle";
  const deliver = (id: string, message: SessionMessage) => void live.get(id)?.send({ type: "message", message });

  return {
    start,
    stop,
    /** Sends a message to the live actor of `id` (a no-op when there is none). */
    deliver,
    get: (id: string) => live.get(id),
    active,
    /** Live and waiting for a message (not loading, not running a turn). */
    idle,
    size: () => live.size,
    ids: () => [...live.keys()],
    /** Stops every session: each stops its turn at the last durable checkpoint. */
    stopAll() {
      for (const id of [...live.keys()]) stop(id);
    },
    /** What the supervisor machine needs, for `supervisorMachine.provide`. */
    provided: {
      actions: {
        startSession: (_: unknown, p: { id: string; input: SessionInput }) => start(p.id, p.input),
        stopSession: (_: unknown, p: { id: string }) => stop(p.id),
        deliverToSession: (_: unknown, p: { id: string; message: SessionMessage }) => deliver(p.id, p.message),
      },
      guards: {
        sessionActive: (_: unknown, p: unknown) => active((p as { id: string }).id),
        sessionIdle: (_: unknown, p: unknown) => idle((p as { id: string }).id),
      },
    },
  };
}
export type SessionHost = ReturnType<typeof createSessionHost>;
