import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { z } from "zod";
import { StoreLockedError } from "../errors.js";
import { diagnoseOpenFailure, droppedAtOpen, type DroppedAtOpen } from "./damage.js";
import { corruptRecordError, decodeRows, parseRecord, type CorruptRecord, type ListOptions } from "./decoding.js";
import { createDiskProbe } from "./disk-probe.js";
import { CACHED_PREFIXES, encodeOps, MIRRORED_PREFIXES, openLevel, prefixEnd, SUB_END, SUB_PREFIX, type Db, type StoreOp, type SublevelName } from "./encoding.js";
import type { GroupCommitStats } from "./group-commit.js";
import { createStoreHealth, StoreUnavailableError, type StoreHealth } from "./health.js";
import { createAbsenceFilter, createRangeMirror, createRecordCache } from "./known.js";
import { createStoreWriter } from "./writer.js";

// The Store's own vocabulary, imported with it from here by most of troupe (encoding.ts and
// decoding.ts define them beside the code that encodes and parses records).
export type { CorruptRecord, ListOptions, StoreOp, SublevelName };

export interface Store {
  readonly path: string;
  get<S extends z.ZodType>(sublevel: SublevelName, key: string, schema: S): Promise<z.infer<S> | undefined>;
  /** All records of a sublevel in key order, optionally within a key prefix. */
  list<S extends z.ZodType>(
    sublevel: SublevelName,
    schema: S,
    opts?: { prefix?: string; limit?: number; /** Narrow the prefix's range (keys within the prefix). */ gte?: string; lt?: string } & ListOptions,
  ): Promise<Array<{ key: string; value: z.infer<S> }>>;
  /** One atomic batch across sublevels. With sync it goes through the group-commit writer. */
  batch(ops: StoreOp[], opts?: { sync?: boolean }): Promise<void>;
  readonly commitStats: GroupCommitStats;
  /** The same for unsynced batches, which coalesce too (those that rode with a synced group are `commitStats.joined`). */
  readonly unsyncedStats: GroupCommitStats;
  /** Reads so far: those that went to LevelDB (gets, iterators) and those answered from what the store wrote (see known.ts). */
  readonly readStats: ReadStats;
  /** ok / failing (a disk failure; writes refused until a probe succeeds and the store is reopened) / recovering. */
  readonly health: StoreHealth;
  /** What LevelDB dropped as corrupt while opening (from its LOG file); null when nothing. */
  readonly droppedAtOpen: DroppedAtOpen | null;
  /**
   * Called once the store is reopened after a failure (state `recovering`), to resume the work the
   * failure interrupted; the state becomes `ok` when it resolves.
   */
  onRecovered(handler: () => Promise<void>): void;
  /** Asks LevelDB to compact its files now, so space freed by deletions is given back to the disk. */
  reclaim(): Promise<void>;
  close(): Promise<void>;
}

export interface ReadStats {
  /** LevelDB gets and iterators, by sublevel. */
  gets: Partial<Record<SublevelName, number>>;
  lists: Partial<Record<SublevelName, number>>;
  /** Reads answered without LevelDB: a record this process wrote, a listing its index knows is empty. */
  fromMemory: number;
}

export interface StoreOptions {
  /** `troupe doctor`: a missing store is not created, no holder file is written and writes are refused. */
  readOnly?: boolean;
  /** The wait before the first probe of a failing store, doubled after each failed probe up to maxMs. */
  probe?: { baseMs?: number; maxMs?: number };
  /** Where the store reports a failure, a probe and a recovery (the daemon's logger). */
  log?: { error(obj: object, msg: string): void; warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
  /**
   * Called once LevelDB has been asked to open the store, which it does on a thread of its own: a
   * caller that has other work (a command loading the rest of its code) can do it meanwhile.
   */
  onOpening?: () => void;
}

const HOLDER_FILE = "holder.json";

async function readHolderPid(path: string): Promise<number | undefined> {
  try {
    const holder = JSON.parse(await readFile(join(path, HOLDER_FILE), "utf8")) as { pid?: unknown };
    return typeof holder.pid === "number" ? holder.pid : undefined;
  } catch {
    return undefined;
  }
}

function isLocked(err: unknown): boolean {
  const e = err as { code?: string; cause?: { code?: string } };
  return e.code === "LEVEL_LOCKED" || e.cause?.code === "LEVEL_LOCKED";
}

/**
 * Opens the store (LevelDB allows one process at a time). A store that cannot open because it is
 * damaged (a missing CURRENT or MANIFEST file, corruption) is a StoreDamagedError naming what is
 * damaged and the command that repairs it.
 */
export async function openStore(path: string, opts: StoreOptions = {}): Promise<Store> {
  if (!opts.readOnly) await mkdir(path, { recursive: true });
  // Checked before LevelDB opens it: without its CURRENT file LevelDB would start an empty store over the old files.
  const damaged = await diagnoseOpenFailure(path, undefined);
  if (damaged) throw damaged;
  let db: Db = openLevel(path);
  try {
    const opened = db.open({ createIfMissing: !opts.readOnly });
    opts.onOpening?.();
    await opened;
  } catch (err) {
    if (isLocked(err)) throw new StoreLockedError(path, await readHolderPid(path));
    throw (await diagnoseOpenFailure(path, err)) ?? err;
  }
  const cache = createRecordCache(CACHED_PREFIXES);
  const mirror = createRangeMirror(MIRRORED_PREFIXES);
  // Not for a read-only store: it is never written, and its reads go to LevelDB.
  const absence = createAbsenceFilter(CACHED_PREFIXES);
  const readStats: ReadStats = { gets: {}, lists: {}, fromMemory: 0 };
  /** The mirror from LevelDB (a read-only store keeps none: it is never written, and reads go to LevelDB). */
  async function buildMirror(): Promise<void> {
    const ranges = await Promise.all(MIRRORED_PREFIXES.map((p) => db.iterator({ gte: p, lt: prefixEnd(p)! }).all()));
    mirror.build(ranges.flat());
  }
  /** Keys only, a thousand at a time: the sessions' metas and consolidation states, one each per session. */
  async function scanKeys(prefix: string): Promise<void> {
    const keys = db.keys({ gte: prefix, lt: prefixEnd(prefix)! });
    try {
      for (let some = await keys.nextv(1_000); some.length; some = await keys.nextv(1_000)) absence.add(some);
    } finally {
      await keys.close();
    }
  }
  // What the open leaves to do, at once: each is a few trips to LevelDB's or libuv's threads, and a
  // cold `troupe agent -m` waits for all of them before its turn starts.
  const [dropped] = opts.readOnly
    ? [null]
    : await Promise.all([
        droppedAtOpen(path),
        buildMirror(),
        ...CACHED_PREFIXES.map(scanKeys),
        writeFile(join(path, HOLDER_FILE), JSON.stringify({ pid: process.pid, since: new Date().toISOString() })),
      ]);
  if (!opts.readOnly) absence.built();

  const health = createStoreHealth();

  let closed = false;
  let recoveryHandler: (() => Promise<void>) | undefined;

  /** Closes and opens LevelDB again: it keeps a failed background write as its state until then. */
  async function reopen(): Promise<void> {
    await writer.drain();
    await db.close().catch(() => undefined);
    db = openLevel(path);
    await db.open({ createIfMissing: false });
    cache.clear();
    await buildMirror();
    await db.batch(encodeOps([{ type: "put", sublevel: "meta", key: "store-probe", value: { at: Date.now() } }]), { sync: true });
    await db.batch(encodeOps([{ type: "del", sublevel: "meta", key: "store-probe" }]), { sync: true });
  }
  const disk = createDiskProbe({ path, health, probe: opts.probe, log: opts.log, isClosed: () => closed, reopen, recovered: () => recoveryHandler?.() });
  const writer = createStoreWriter({ path, db: () => db, health, cache, mirror, absence, reopening: () => disk.reopening, failing: disk.failing });

  /** A read while the store is closed for a probe is refused as the failure it is. */
  async function reading<T>(read: () => Promise<T>): Promise<T> {
    if (disk.reopening) await disk.reopening;
    try {
      return await read();
    } catch (err) {
      const failure = health.snapshot().failure;
      if (failure && (err as { code?: string }).code === "LEVEL_DATABASE_NOT_OPEN") throw new StoreUnavailableError(failure, { cause: err });
      throw err;
    }
  }

  return {
    path,
    commitStats: writer.commitStats,
    unsyncedStats: writer.unsyncedStats,
    readStats,
    health,
    droppedAtOpen: dropped,
    onRecovered(handler) {
      recoveryHandler = handler;
    },
    async get(sublevel, key, schema) {
      const rootKey = SUB_PREFIX[sublevel] + key;
      const known = closed || disk.reopening ? "unknown" : absence.absent(rootKey) ? { text: undefined, own: true } : cache.lookup(rootKey);
      let text: string | undefined;
      let own = false;
      if (known === "unknown") {
        readStats.gets[sublevel] = (readStats.gets[sublevel] ?? 0) + 1;
        const ticket = cache.reading(SUB_PREFIX[sublevel] + key);
        text = await reading(() => db.get(SUB_PREFIX[sublevel] + key));
        cache.read(SUB_PREFIX[sublevel] + key, ticket, text);
      } else {
        readStats.fromMemory++;
        text = known.text;
        own = known.own;
      }
      if (text === undefined) return undefined;
      const parsed = parseRecord(sublevel, key, text, schema, own);
      if ("corrupt" in parsed) throw corruptRecordError(parsed.corrupt);
      return parsed.value;
    },
    async list(sublevel, schema, opts = {}) {
      const end = opts.prefix === undefined ? undefined : prefixEnd(opts.prefix);
      const gte = opts.gte ?? (opts.prefix || undefined);
      const lt = opts.lt ?? end;
      const at = SUB_PREFIX[sublevel];
      const range = { gte: gte === undefined ? at : at + gte, lt: lt === undefined ? SUB_END[sublevel] : at + lt };
      const mirrored = closed || disk.reopening ? undefined : mirror.rows(range.gte, range.lt);
      if (mirrored) {
        readStats.fromMemory++;
        return decodeRows(sublevel, mirrored.slice(0, opts.limit === undefined || opts.limit < 0 ? undefined : opts.limit), schema, opts);
      }
      readStats.lists[sublevel] = (readStats.lists[sublevel] ?? 0) + 1;
      return reading(async () => {
        // One call for the whole range (a listing is read whole anyway), not a promise per record.
        const rows = await db.iterator({ ...range, limit: opts.limit ?? -1 }).all();
        return decodeRows(sublevel, rows, schema, opts);
      });
    },
    async batch(ops, batchOpts = {}) {
      if (opts.readOnly) throw new Error(`the store at ${path} was opened read-only`);
      if (ops.length === 0) return;
      return writer.batch(ops, batchOpts.sync);
    },
    async reclaim() {
      if (opts.readOnly) return;
      // Every sublevel's keys start with "!"; "~" sorts after them all.
      // (`level` is classic-level in Node; its types are the browser's and Node's common part.)
      const classic = db as unknown as { compactRange(start: string, end: string): Promise<void> };
      await reading(() => classic.compactRange("!", "~"));
    },
    async close() {
      closed = true;
      disk.stop();
      if (disk.reopening) await disk.reopening;
      await writer.drain();
      await db.close();
    },
  };
}
