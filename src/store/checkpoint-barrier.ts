/**
 * Lets an effect wait until the checkpoint that precedes it is durable. The turn runner marks
 * (turnId, seq) once a checkpoint batch is synced; an invoked actor awaits reached(turnId, seq).
 */
export interface CheckpointBarrier {
  mark(turnId: string, seq: number): void;
  /**
   * Resolves once (turnId, seq) is marked durable. A wait whose signal was aborted meanwhile (its
   * actor stopped) is rejected with the signal's reason instead, when its checkpoint arrives: its
   * effect never starts. A wait still pending when the turn is forgotten is dropped.
   */
  reached(turnId: string, seq: number, signal?: AbortSignal): Promise<void>;
  forget(turnId: string): void;
}

interface Waiter {
  seq: number;
  signal?: AbortSignal;
  resolve: () => void;
  reject: (reason: unknown) => void;
}

/**
 * No abort listener per wait: the signal is read when the wait is let through (Node's EventTarget
 * add and remove cost more than the rest of a wait, and every effect of a turn waits once).
 */
export function createCheckpointBarrier(): CheckpointBarrier {
  const durable = new Map<string, number>();
  const waiters = new Map<string, Waiter[]>();
  return {
    mark(turnId, seq) {
      durable.set(turnId, Math.max(seq, durable.get(turnId) ?? -1));
      // Most marks find nobody waiting (the effect starts after it): no arrays built for them.
      const list = waiters.get(turnId);
      if (!list) return;
      const ready = list.filter((w) => w.seq <= seq);
      if (ready.length === 0) return;
      const rest = list.filter((w) => w.seq > seq);
      if (rest.length) waiters.set(turnId, rest);
      else waiters.delete(turnId);
      for (const w of ready) {
        if (w.signal?.aborted) w.reject(w.signal.reason);
        else w.resolve();
      }
    },
    reached(turnId, seq, signal) {
      if (signal?.aborted) return Promise.reject(signal.reason as unknown);
      if ((durable.get(turnId) ?? -1) >= seq) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const waiter: Waiter = { seq, signal, resolve, reject };
        const list = waiters.get(turnId);
        if (list) list.push(waiter);
        else waiters.set(turnId, [waiter]);
      });
    },
    forget(turnId) {
      durable.delete(turnId);
      waiters.delete(turnId);
    },
  };
}
