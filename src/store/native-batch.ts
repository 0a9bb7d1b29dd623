import type { Db, EncodedOps } from "./encoding.js";

/** classic-level's own chained batch (abstract-level's private API): it takes text keys and values as they are. */
interface NativeBatch {
  _put(key: string, value: string): void;
  _del(key: string): void;
  _write(opts: { sync: boolean }): Promise<void>;
}
type PrivateLevel = { _chainedBatch(): NativeBatch; detachResource(resource: unknown): void };

/**
 * Writes ops already encoded (text keys and values). abstract-level's public batch clones and
 * re-normalises every op (encodings, hooks, events: none of which the store uses); an open
 * database gets them straight into classic-level's native batch, one call per op with its key and
 * value (its array form looked up `type`, `key` and `value` by name on every op, ~40% more of the
 * main thread's time per op). Anything else (opening, closing, closed) goes through the public
 * batch, which waits or refuses as it should.
 */
export function batchEncoded(db: Db, ops: EncodedOps, sync: boolean): Promise<void> {
  const level = db as unknown as Partial<PrivateLevel>;
  if (db.status !== "open" || typeof level._chainedBatch !== "function" || typeof level.detachResource !== "function") return db.batch(ops, { sync });
  // Attached to the database by its constructor (so a close waits for it): detached once written.
  const batch = level._chainedBatch();
  try {
    for (const op of ops) {
      if (op.type === "put") batch._put(op.key, op.value);
      else batch._del(op.key);
    }
  } catch (err) {
    level.detachResource(batch);
    throw err;
  }
  return batch._write({ sync }).finally(() => level.detachResource!(batch));
}
