import { afterEach } from "vitest";
import { runCli } from "./cli.js";

/** What a test opens: a daemon is shut down; a store, fake server or gateway process closed. */
export type Closable = { shutdown(): Promise<unknown> } | { close(): unknown };

/**
 * After each test, closes what `opened()` names, in the order listed (list what depends on the
 * others first: a daemon before its fake model), each thing once even when a variable still points
 * at it in a later test. A close that fails fails the test, after the others have been closed.
 *
 * Call it after `useTempDirs()`: vitest runs afterEach hooks last-registered first, so everything is
 * closed before its temporary directory is removed.
 */
export function closeAfterEach(opened: () => ReadonlyArray<Closable | undefined>): void {
  const closed = new WeakSet<Closable>();
  afterEach(() => closeEach(opened(), closed));
}

/** Closes each thing not yet in `closed`, in order; then throws the first failure (or all of them). */
export async function closeEach(things: ReadonlyArray<Closable | undefined>, closed: WeakSet<Closable>): Promise<void> {
  const errors: unknown[] = [];
  for (const thing of things) {
    if (!thing || closed.has(thing)) continue;
    closed.add(thing);
    try {
      await ("shutdown" in thing ? thing.shutdown() : thing.close());
    } catch (error) {
      errors.push(error);
    }
  }
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) throw new AggregateError(errors, "several things failed to close after the test");
}

const detached = new Map<string, Closable>();

/**
 * The detached daemon of a data dir (one handle per dir, so closeAfterEach stops it once): closing
 * runs `troupe daemon stop` there, and fails when that fails (a daemon left running outlives the test
 * and its directory). A daemon that is not running is stopped already (`daemon stop` exits 0).
 */
export function detachedDaemon(home: string | undefined, run: typeof runCli = runCli): Closable | undefined {
  if (home === undefined) return undefined;
  let daemon = detached.get(home);
  if (!daemon) {
    const close = async () => {
      const stop = await run(["daemon", "stop"], { TROUPE_HOME: home });
      if (stop.code !== 0) throw new Error(`troupe daemon stop in ${home} exited ${stop.code}: ${stop.stderr.trim() || stop.stdout.trim()}`);
    };
    detached.set(home, (daemon = { close }));
  }
  return daemon;
}
