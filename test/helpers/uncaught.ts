/**
 * Runs `body` with the process's uncaughtException listeners (vitest's among them) replaced by one
 * that records what is thrown, and gives the record to `body`: XState rethrows an actor's unhandled
 * error from a timer, which would otherwise fail the run (or, in a gateway, exit it).
 */
export async function catchingUncaught<T>(body: (uncaught: unknown[]) => Promise<T>): Promise<T> {
  const uncaught: unknown[] = [];
  const record = (err: unknown) => uncaught.push(err);
  const others = process.listeners("uncaughtException");
  process.removeAllListeners("uncaughtException");
  process.on("uncaughtException", record);
  try {
    return await body(uncaught);
  } finally {
    process.removeListener("uncaughtException", record);
    for (const l of others) process.on("uncaughtException", l);
  }
}
