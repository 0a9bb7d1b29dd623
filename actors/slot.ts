import { fromCallback, type AnyActorRef } from "xstate";
import type { Limiter, Release } from "../src/limiter.js";
import type { SessionEvent, SlotInput } from "../machines/session.machine.js";

/**
 * The sessions' turn slots (agents.defaults.maxConcurrentTurns), held by session actor. A free slot
 * is taken by an action (`slotFree`, then `takeSlot`): no actor, no event; it used to be a callback
 * actor per turn and a `slot.granted` round trip, a seventh of a turn's actors. Only a session that
 * has to wait invokes `slot`, which gives up its place in the queue if it is stopped first. `active`
 * gives the slot back on exit (`releaseSlot`); XState runs no exit action on an actor it stops, so
 * the session host calls `release` when a session actor is gone.
 */
export function createSlots(limiter: Limiter) {
  const held = new Map<AnyActorRef, Release>();
  const release = (owner: AnyActorRef) => {
    const r = held.get(owner);
    if (!r) return;
    held.delete(owner);
    r();
  };
  const hold = (owner: AnyActorRef, r: Release) => {
    release(owner);
    held.set(owner, r);
  };

  const slot = fromCallback<SessionEvent, SlotInput>(({ input, sendBack }) => {
    let stopped = false;
    let granted = false;
    const giveUp = new AbortController();
    limiter.acquire(giveUp.signal).then(
      (r) => {
        // Stopped before the grant arrived: the slot goes straight back.
        if (stopped) return r();
        granted = true;
        hold(input.owner, r);
        sendBack({ type: "slot.granted" });
      },
      () => {
        // Stopped while waiting: the place in the queue is given up.
      },
    );
    return () => {
      stopped = true;
      // Once granted the slot is the session's (given back by releaseSlot), not this actor's.
      if (!granted) giveUp.abort();
    };
  });

  return {
    slot,
    /** Gives back the slot a session actor holds (a no-op when it holds none). */
    release,
    /** Sessions holding a slot now. */
    holders: () => held.size,
    /** What the session machine needs, for `sessionMachine.provide`. */
    guards: { slotFree: () => limiter.active < limiter.max && limiter.waiting === 0 },
    actions: {
      takeSlot: ({ self }: { self: AnyActorRef }) => {
        const r = limiter.tryAcquire();
        if (r) hold(self, r);
      },
      releaseSlot: ({ self }: { self: AnyActorRef }) => release(self),
    },
  };
}
export type Slots = ReturnType<typeof createSlots>;
