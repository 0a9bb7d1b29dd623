import { open, unlink } from "node:fs/promises";
import { join } from "node:path";
import { injectedDiskFull } from "../fault.js";
import { StoreUnavailableError, type StoreFailure, type StoreHealth } from "./health.js";

/**
 * A store whose disk failed: writes refused, the disk probed (with a back-off) until it takes a
 * synced write again, then the store reopened and the interrupted work resumed.
 */

/** How much a probe writes (and deletes) to check that the disk takes writes again. */
const PROBE_BYTES = 256 * 1024;

export interface DiskProbeDeps {
  path: string;
  health: StoreHealth;
  /** The wait before the first probe, doubled after each failed probe up to maxMs. */
  probe?: { baseMs?: number; maxMs?: number };
  log?: { error(obj: object, msg: string): void; warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
  isClosed(): boolean;
  /** Closes and opens LevelDB again (it keeps a failed background write as its state until then). */
  reopen(): Promise<void>;
  /** Resumes the work the failure interrupted, once the store is reopened. */
  recovered(): Promise<void> | undefined;
}

export interface DiskProbe {
  /** A failure of the disk: writes are refused from now on, until a probe finds it writable and the store is reopened. */
  failing(failure: StoreFailure, err: unknown): StoreUnavailableError;
  /** Set while the store is being reopened: every operation waits for it. */
  readonly reopening: Promise<void> | undefined;
  /** No more probes (the store is closing). */
  stop(): void;
}

export function createDiskProbe(deps: DiskProbeDeps): DiskProbe {
  const { path, health } = deps;
  const baseMs = deps.probe?.baseMs ?? 1_000;
  const maxMs = deps.probe?.maxMs ?? 15_000;
  let probeTimer: NodeJS.Timeout | undefined;
  let reopening: Promise<void> | undefined;

  function failing(failure: StoreFailure, err: unknown): StoreUnavailableError {
    if (health.state !== "failing") {
      deps.log?.error({ err, failure }, "store write failed; refusing writes until the disk takes them again");
      health.fail(failure, Date.now());
      scheduleProbe();
    }
    return new StoreUnavailableError(failure, { cause: err });
  }

  function scheduleProbe() {
    if (deps.isClosed() || probeTimer) return;
    const delay = Math.min(maxMs, baseMs * 2 ** Math.min(20, health.snapshot().probes));
    probeTimer = setTimeout(() => {
      probeTimer = undefined;
      void probe();
    }, delay);
    probeTimer.unref();
  }

  /** Whether the disk takes a synced write again: a file of PROBE_BYTES next to the store. */
  async function diskWritable(): Promise<boolean> {
    if (injectedDiskFull(path)) return false;
    const file = join(path, "probe.tmp");
    try {
      const fh = await open(file, "w");
      try {
        await fh.write(Buffer.alloc(PROBE_BYTES));
        await fh.sync();
      } finally {
        await fh.close();
      }
      return true;
    } catch {
      return false;
    } finally {
      await unlink(file).catch(() => undefined);
    }
  }

  async function probe(): Promise<void> {
    if (deps.isClosed() || health.state !== "failing") return;
    health.probed();
    if (!(await diskWritable())) return scheduleProbe();
    let done!: () => void;
    reopening = new Promise((resolve) => (done = resolve));
    try {
      await deps.reopen();
    } catch (err) {
      deps.log?.warn({ err, probes: health.snapshot().probes }, "store still not writable; probing again");
      return scheduleProbe();
    } finally {
      reopening = undefined;
      done();
    }
    if (deps.isClosed()) return;
    deps.log?.info({ failure: health.snapshot().failure, probes: health.snapshot().probes }, "store writable again; reopened it, resuming interrupted work");
    health.set("recovering");
    try {
      await deps.recovered();
    } catch (err) {
      deps.log?.error({ err }, "resuming work after the store recovered failed");
    }
    if (health.snapshot().state === "recovering") health.set("ok");
  }

  return {
    failing,
    get reopening() {
      return reopening;
    },
    stop() {
      clearTimeout(probeTimer);
    },
  };
}
