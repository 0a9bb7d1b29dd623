import { fromCallback } from "xstate";
import type { Limiter, Release } from "../src/limiter.js";
import type { SessionEvent } from "../machines/session.machine.js";

/**
 * Holds one slot of the daemon-wide turn limit while invoked; says slot.granted once it has it.
 * A free slot is taken at once (no AbortController: aborting one makes a DOMException with a stack,
 * per turn); only a session that has to wait gets a signal to give up its place with.
 */
export function createSlot(limiter: Limiter) {
  return fromCallback<SessionEvent, { sessionKey: string }>(({ sendBack }) => {
    let release: Release | undefined;
    let stopped = false;
    const granted = (r: Release) => {
      // Stopped before the grant arrived: the slot goes straight back.
      if (stopped) return r();
      release = r;
      sendBack({ type: "slot.granted" });
    };
    let giveUp: AbortController | undefined;
    const now = limiter.tryAcquire();
    if (now) queueMicrotask(() => granted(now));
    else {
      giveUp = new AbortController();
      limiter.acquire(giveUp.signal).then(granted, () => {
        // Stopped while waiting: the place in the queue is given up.
      });
    }
    return () => {
      stopped = true;
      if (release) release();
      else giveUp?.abort();
    };
  });
}
