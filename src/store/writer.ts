import { injectedDiskFull } from "../fault.js";
import { encodeOps, knownOps, type Db, type EncodedOps, type StoreOp } from "./encoding.js";
import { createGroupCommit, type GroupCommitStats } from "./group-commit.js";
import { classifyStoreError, StoreUnavailableError, type StoreFailure, type StoreHealth } from "./health.js";
import type { createAbsenceFilter, createRangeMirror, createRecordCache } from "./known.js";
import { batchEncoded } from "./native-batch.js";

/**
 * The store's write path: batches encoded, coalesced by the group-commit writers (synced and
 * unsynced), written to LevelDB, and the in-memory indexes (known.ts) told what was written.
 */

export interface StoreWriterDeps {
  path: string;
  /** The database now: a reopen after a disk failure replaces it. */
  db(): Db;
  health: StoreHealth;
  cache: ReturnType<typeof createRecordCache>;
  mirror: ReturnType<typeof createRangeMirror>;
  absence: ReturnType<typeof createAbsenceFilter>;
  /** Set while the store is being reopened: a write waits for it. */
  reopening(): Promise<void> | undefined;
  /** A write failed as the disk does: the store refuses writes from now on (see disk-probe.ts). */
  failing(failure: StoreFailure, err: unknown): StoreUnavailableError;
}

export interface StoreWriter {
  readonly commitStats: GroupCommitStats;
  readonly unsyncedStats: GroupCommitStats;
  /** One atomic batch: with sync through the synced group commit. */
  batch(ops: StoreOp[], sync: boolean | undefined): Promise<void>;
  /** Waits until every batch handed in is written. */
  drain(): Promise<void>;
}

export function createStoreWriter(deps: StoreWriterDeps): StoreWriter {
  const { path, health, cache, mirror, absence } = deps;
  /** Numbers writes in the order they are handed in, so the cache keeps the newest of a key. */
  let writeSeq = 0;

  async function write(encoded: EncodedOps, sync: boolean): Promise<void> {
    if (health.state === "failing") throw new StoreUnavailableError(health.snapshot().failure ?? "io-error");
    const reopening = deps.reopening();
    if (reopening) await reopening;
    try {
      const injected = injectedDiskFull(path);
      if (injected) throw injected;
      const seq = ++writeSeq;
      const known = knownOps(encoded);
      absence.writing(known);
      cache.writing(known);
      try {
        await batchEncoded(deps.db(), encoded, sync);
      } catch (err) {
        // What of it reached the disk is unknown until LevelDB is read again.
        cache.written(known, seq, false);
        cache.clear();
        mirror.invalidate();
        throw err;
      }
      cache.written(known, seq);
      mirror.written(known);
    } catch (err) {
      const failure = classifyStoreError(err);
      if (!failure) throw err;
      throw deps.failing(failure, err);
    }
  }
  const synced = createGroupCommit<EncodedOps[number]>((ops) => write(ops, true));
  /**
   * Unsynced batches (a tool's result, which the next synced checkpoint makes durable) coalesce
   * too: each is one call into LevelDB's thread pool, which costs more than the write itself; each
   * caller still waits for its own write, so its order against its next write is kept.
   */
  const unsynced = createGroupCommit<EncodedOps[number]>((ops) => write(ops, false));

  return {
    commitStats: synced.stats,
    unsyncedStats: unsynced.stats,
    batch(ops, sync) {
      // Encoded here, so a value with no JSON form fails its own batch, not the group it would join.
      const encoded = encodeOps(ops);
      if (sync) return synced.commit(encoded);
      // While a synced write is in flight, an unsynced batch rides with the next synced group (written
      // synced: stronger, and one LevelDB call fewer) instead of a write of its own.
      return synced.join(encoded) ?? unsynced.commit(encoded);
    },
    async drain() {
      await synced.drain();
      await unsynced.drain();
    },
  };
}
