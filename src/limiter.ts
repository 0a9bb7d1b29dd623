/** Releases a slot; calling it twice is harmless. */
export type Release = () => void;

export interface Limiter {
  /** Waits for a free slot, first come first served. Aborting gives up the place in the queue. */
  acquire(signal?: AbortSignal): Promise<Release>;
  /** A slot now if one is free (and nobody waits), else undefined. */
  tryAcquire(): Release | undefined;
  readonly active: number;
  readonly waiting: number;
  readonly max: number;
}

/** A FIFO counting semaphore: at most `max` holders, waiters served in arrival order (fair). */
export function createLimiter(max: number): Limiter {
  let active = 0;
  const queue: Array<{ grant: () => void }> = [];

  const release = (): Release => {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = queue.shift();
      if (next) next.grant();
      else active--;
    };
  };

  return {
    get active() {
      return active;
    },
    get waiting() {
      return queue.length;
    },
    max,
    tryAcquire() {
      if (active >= max || queue.length > 0) return undefined;
      active++;
      return release();
    },
    acquire(signal) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      const now = this.tryAcquire();
      if (now) return Promise.resolve(now);
      return new Promise<Release>((resolve, reject) => {
        const entry = {
          grant: () => {
            signal?.removeEventListener("abort", onAbort);
            resolve(release());
          },
        };
        const onAbort = () => {
          const i = queue.indexOf(entry);
          if (i >= 0) queue.splice(i, 1);
          reject(signal?.reason);
        };
        signal?.addEventListener("abort", onAbort, { once: true });
        queue.push(entry);
      });
    },
  };
}
