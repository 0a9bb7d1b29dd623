/**
 * Lets an effect wait until the checkpoint that precedes it is durable. The turn runner marks
 * (turnId, seq) once a checkpoint batch is synced; an invoked actor awaits reached(turnId, seq).
 */
export interface CheckpointBarrier {
  mark(turnId: string, seq: number): void;
  reached(turnId: string, seq: number, signal?: AbortSignal): Promise<void>;
  forget(turnId: string): void;
}

export function createCheckpointBarrier(): CheckpointBarrier {
  const durable = new Map<string, number>();
  const waiters = new Map<string, Array<{ seq: number; resolve: () => void }>>();
  return {
    mark(turnId, seq) {
      durable.set(turnId, Math.max(seq, durable.get(turnId) ?? -1));
      const list = waiters.get(turnId) ?? [];
      const ready = list.filter((w) => w.seq <= seq);
      waiters.set(turnId, list.filter((w) => w.seq > seq));
      for (const w of ready) w.resolve();
    },
    reached(turnId, seq, signal) {
      if ((durable.get(turnId) ?? -1) >= seq) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const waiter = { seq, resolve };
        waiters.set(turnId, [...(waiters.get(turnId) ?? []), waiter]);
        signal?.addEventListener(
          "abort",
          () => {
            waiters.set(turnId, (waiters.get(turnId) ?? []).filter((w) => w !== waiter));
            reject(signal.reason);
          },
          { once: true },
        );
      });
    },
    forget(turnId) {
      durable.delete(turnId);
      waiters.delete(turnId);
    },
  };
}
