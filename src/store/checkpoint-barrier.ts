/**
 * Lets an effect wait until the checkpoint that precedes it is durable. The turn runner marks
 * (turnId, seq) once a checkpoint batch is synced; an invoked actor awaits reached(turnId, seq).
 */
export interface CheckpointBarrier {
  mark(turnId: string, seq: number): void;
  reached(turnId: string, seq: number, signal?: AbortSignal): Promise<void>;
  forget(turnId: string): void;
}

interface Waiter {
  seq: number;
  resolve: () => void;
}

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
      for (const w of ready) w.resolve();
    },
    reached(turnId, seq, signal) {
      if ((durable.get(turnId) ?? -1) >= seq) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const onAbort = () => {
          const rest = (waiters.get(turnId) ?? []).filter((w) => w !== waiter);
          if (rest.length) waiters.set(turnId, rest);
          else waiters.delete(turnId);
          reject(signal!.reason);
        };
        // Its abort listener goes with it: a turn's signal outlives many waits.
        const waiter: Waiter = {
          seq,
          resolve: () => {
            signal?.removeEventListener("abort", onAbort);
            resolve();
          },
        };
        const list = waiters.get(turnId);
        if (list) list.push(waiter);
        else waiters.set(turnId, [waiter]);
        signal?.addEventListener("abort", onAbort, { once: true });
      });
    },
    forget(turnId) {
      durable.delete(turnId);
      waiters.delete(turnId);
    },
  };
}
