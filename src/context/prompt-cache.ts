/**
 * A value built by an async read (the system prompt: bootstrap files, memory, every skill), reused
 * for `ttlMs` after its build started, so changes to what it reads show up within that.
 *
 * A request never waits for a rebuild while the value it would get is younger than `ttlMs`: from
 * half the TTL on, a request gets the current value and starts one rebuild in the background, which
 * replaces it once built. Under steady traffic the value is then always fresh and no request waits;
 * without the early rebuild every request made while the value was rebuilt (at each TTL, a busy
 * daemon's whole wave of turns: ~40 ms under load) waited for the files to be read again. A value
 * older than the TTL is never handed out; `invalidate` (the memory changed) makes the next request
 * build afresh, and a rebuild started before it is dropped.
 */
export interface TimedCache<T> {
  get(): Promise<T>;
  invalidate(): void;
}

interface Entry<T> {
  value: Promise<T>;
  at: number;
}

export function createTimedCache<T>(build: () => Promise<T>, opts: { ttlMs: number; now: () => number }): TimedCache<T> {
  let current: Entry<T> | undefined;
  let rebuilding: Entry<T> | undefined;

  const start = (): Entry<T> => {
    const entry = { value: build(), at: opts.now() };
    // A failed build is not kept: the next request builds again.
    entry.value.catch(() => {
      if (current === entry) current = undefined;
      if (rebuilding === entry) rebuilding = undefined;
    });
    return entry;
  };

  return {
    get() {
      const now = opts.now();
      if (current && now - current.at < opts.ttlMs) {
        if (!rebuilding && now - current.at >= opts.ttlMs / 2) {
          const entry = (rebuilding = start());
          entry.value.then(
            () => {
              if (rebuilding !== entry) return;
              current = entry;
              rebuilding = undefined;
            },
            () => undefined,
          );
        }
        return current.value;
      }
      // Too old (or none): a rebuild started within the TTL is as fresh as a new one.
      current = rebuilding && now - rebuilding.at < opts.ttlMs ? rebuilding : start();
      rebuilding = undefined;
      return current.value;
    },
    invalidate() {
      current = undefined;
      rebuilding = undefined;
    },
  };
}
