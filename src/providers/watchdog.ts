/**
 * The time limits of a provider's calls in flight (an attempt that hears nothing for too long, a call
 * or an attempt past its deadline), watched by one timer for all of them. The timer is armed for the
 * earliest limit; when it fires it checks every call, ends those whose limit ran out and is armed
 * again for the next. A call costs an entry in a set (not a timer per limit, set and cleared on
 * every call), and a byte received moves a timestamp. A limit never acts early: a call that was
 * heard from since is simply checked again later.
 */

/** One call's limits, on Date.now()'s clock. */
export interface Limited {
  /** When the current attempt last heard from the server. */
  heardAt: number;
  /** How long an attempt may hear nothing; Infinity between attempts. */
  idleMs: number;
  /** When the call (or, retrying without a bound, the attempt) runs out; Infinity for none. */
  deadline: number;
  /** A limit ran out (it is cleared first: it acts once). */
  expire(limit: "idle" | "deadline"): void;
}

/** setTimeout's longest delay (a longer one would fire at once). */
const MAX_DELAY = 2 ** 31 - 1;

export interface Watchdog {
  /** Starts watching `call`, or takes its changed limits into account. */
  watch(call: Limited): void;
  unwatch(call: Limited): void;
}

export function createWatchdog(): Watchdog {
  const watched = new Set<Limited>();
  let timer: NodeJS.Timeout | undefined;
  let armedFor = Infinity;

  const dueAt = (c: Limited) => Math.min(c.heardAt + c.idleMs, c.deadline);

  function arm(at: number) {
    if (at >= armedFor) return;
    if (timer) clearTimeout(timer);
    armedFor = at;
    // Unref'd: a call in flight holds the process by its socket (or its wait between attempts), never by this timer.
    timer = setTimeout(check, Math.min(Math.max(0, at - Date.now()), MAX_DELAY)).unref();
  }

  function check() {
    timer = undefined;
    armedFor = Infinity;
    const now = Date.now();
    // A copy: ending a call may unwatch it (or watch another) while the set is walked.
    for (const call of [...watched]) {
      for (;;) {
        const idleAt = call.heardAt + call.idleMs;
        const first = Math.min(idleAt, call.deadline);
        if (first > now) break;
        // Both ran out: the one that ran out first acts first (as two timers would have).
        if (idleAt <= call.deadline) {
          call.idleMs = Infinity;
          call.expire("idle");
        } else {
          call.deadline = Infinity;
          call.expire("deadline");
        }
      }
    }
    let next = Infinity;
    for (const call of watched) next = Math.min(next, dueAt(call));
    if (next < Infinity) arm(next);
  }

  return {
    watch(call) {
      watched.add(call);
      const due = dueAt(call);
      if (due < Infinity) arm(due);
    },
    unwatch(call) {
      watched.delete(call);
    },
  };
}
