import { fromCallback } from "xstate";
import type { Limiter, Release } from "../src/limiter.js";
import type { SessionEvent } from "../machines/session.machine.js";

/** Holds one slot of the daemon-wide turn limit while invoked; says slot.granted once it has it. */
export function createSlot(limiter: Limiter) {
  return fromCallback<SessionEvent, { sessionKey: string }>(({ sendBack }) => {
    const giveUp = new AbortController();
    let release: Release | undefined;
    limiter.acquire(giveUp.signal).then(
      (r) => {
        release = r;
        sendBack({ type: "slot.granted" });
      },
      () => {
        // Stopped while waiting: the place in the queue is given up.
      },
    );
    return () => {
      giveUp.abort();
      release?.();
    };
  });
}
