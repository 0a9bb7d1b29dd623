import { TroupeError } from "../errors.js";

/**
 * The store's health. `failing`: a write failed for a reason of the disk (full, read-only, an I/O
 * error); writes are refused at once until a probe finds the disk writable again and the store has
 * been reopened (LevelDB keeps a failed background write as its state until it is reopened).
 * `recovering`: reopened; the daemon resumes the work the failure interrupted, then `ok`.
 */
export type StoreState = "ok" | "failing" | "recovering";
export type StoreFailure = "disk-full" | "read-only" | "io-error";

export interface StoreHealthSnapshot {
  state: StoreState;
  /** Set while failing (and kept while recovering): what failed. */
  failure: StoreFailure | null;
  /** When the current failure began (ms since the epoch). */
  since: number | null;
  /** Probes made during the current failure. */
  probes: number;
}

/** What failed, in words with no file path (they go to API clients and channels). */
export const FAILURE_CAUSE: Record<StoreFailure, string> = {
  "disk-full": "the disk is full",
  "read-only": "the disk is read-only",
  "io-error": "the disk reports I/O errors",
};

/** The fix, for an operator: what to do about the disk holding the data dir. */
export function failureLine(failure: StoreFailure, dataDir: string): string {
  switch (failure) {
    case "disk-full":
      return `the disk holding ${dataDir} is full: free space; troupe resumes by itself`;
    case "read-only":
      return `the disk holding ${dataDir} is read-only: remount it read-write; troupe resumes by itself`;
    case "io-error":
      return `the disk holding ${dataDir} reports I/O errors: check it (dmesg, troupe doctor); troupe resumes by itself once writes succeed`;
  }
}

/** Which disk failure an error from LevelDB or the file system is, or undefined when it is none. */
export function classifyStoreError(err: unknown): StoreFailure | undefined {
  if (err instanceof StoreUnavailableError) return err.failure;
  const e = err as { code?: string; message?: string; cause?: unknown } | undefined;
  const text = `${e?.code ?? ""} ${e?.message ?? ""}`;
  if (/ENOSPC|No space left on device|EDQUOT|Disk quota exceeded/i.test(text)) return "disk-full";
  if (/EROFS|Read-only file system/i.test(text)) return "read-only";
  if (e?.code === "LEVEL_IO_ERROR" || /\bEIO\b|IO error|Input\/output error/i.test(text)) return "io-error";
  if (e?.cause) return classifyStoreError(e.cause);
  return undefined;
}

/**
 * A write refused because the store is failing. Its message names the cause, never a file path:
 * it reaches API clients. `status` is the HTTP answer (507 Insufficient Storage for a full disk).
 */
export class StoreUnavailableError extends TroupeError {
  readonly status: number;
  constructor(
    readonly failure: StoreFailure,
    options?: { cause?: unknown },
  ) {
    super(`troupe cannot store messages right now: ${FAILURE_CAUSE[failure]}. Nothing was accepted; retry later (troupe resumes by itself once the disk is writable).`, options);
    this.status = failure === "disk-full" ? 507 : 503;
  }
}

export interface StoreHealth {
  snapshot(): StoreHealthSnapshot;
  readonly state: StoreState;
  /** Calls `listener` on every change of state; returns the unsubscribe. */
  onChange(listener: (s: StoreHealthSnapshot) => void): () => void;
  /** Resolves once the store is writable again (at once when it is). */
  writable(signal?: AbortSignal): Promise<void>;
  fail(failure: StoreFailure, now: number): void;
  probed(): void;
  set(state: "recovering" | "ok"): void;
}

export function createStoreHealth(): StoreHealth {
  let current: StoreHealthSnapshot = { state: "ok", failure: null, since: null, probes: 0 };
  const listeners = new Set<(s: StoreHealthSnapshot) => void>();
  const change = (next: StoreHealthSnapshot) => {
    current = next;
    for (const l of [...listeners]) l(current);
  };
  return {
    snapshot: () => ({ ...current }),
    get state() {
      return current.state;
    },
    onChange(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    writable(signal) {
      if (current.state !== "failing") return Promise.resolve();
      return new Promise((resolve, reject) => {
        const off = this.onChange((s) => {
          if (s.state === "failing") return;
          off();
          resolve();
        });
        signal?.addEventListener(
          "abort",
          () => {
            off();
            reject(signal.reason);
          },
          { once: true },
        );
      });
    },
    fail(failure, now) {
      if (current.state === "failing") return;
      change({ state: "failing", failure, since: now, probes: 0 });
    },
    probed() {
      current = { ...current, probes: current.probes + 1 };
    },
    set(state) {
      if (current.state === state) return;
      change(state === "ok" ? { state, failure: null, since: null, probes: 0 } : { ...current, state });
    },
  };
}
