import { mkdir, open, readFile, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Level } from "level";
import type { z } from "zod";
import { CorruptRecordError, StoreLockedError } from "../errors.js";
import { injectedDiskFull } from "../fault.js";
import { diagnoseOpenFailure, droppedAtOpen, type DroppedAtOpen } from "./damage.js";
import { createGroupCommit, type GroupCommitStats } from "./group-commit.js";
import { classifyStoreError, createStoreHealth, StoreUnavailableError, type StoreFailure, type StoreHealth } from "./health.js";
import { createAbsenceFilter, createRangeMirror, createRecordCache } from "./known.js";

export const SUBLEVELS = ["sessions", "turns", "journal", "inbox", "outbox", "cron", "meta", "subagents", "blobs"] as const;
export type SublevelName = (typeof SUBLEVELS)[number];

export type StoreOp =
  | { type: "put"; sublevel: SublevelName; key: string; value: unknown }
  | { type: "del"; sublevel: SublevelName; key: string };

/**
 * Keys and values go to LevelDB as text, encoded here once: each sublevel's records are the root
 * database's keys under `!<name>!` (the bytes abstract-level's sublevels write, so stores written
 * through sublevels read the same), values JSON text. Going through sublevel objects instead cost
 * an encoding chain per operation (sublevel, transcoder, parent) on every checkpoint.
 */
type Db = Level<string, string>;
const openLevel = (path: string): Db => new Level<string, string>(path, { keyEncoding: "utf8", valueEncoding: "utf8" });
const SUB_PREFIX = Object.fromEntries(SUBLEVELS.map((name) => [name, `!${name}!`])) as Record<SublevelName, string>;
/** The least key above every key of a sublevel ("!name" then the character after "!"). */
const SUB_END = Object.fromEntries(SUBLEVELS.map((name) => [name, `!${name}"`])) as Record<SublevelName, string>;

/** The root database's batch ops for store ops: keys prefixed, values JSON text. */
export function encodeOps(ops: StoreOp[]): Array<{ type: "put"; key: string; value: string } | { type: "del"; key: string }> {
  const out = new Array<{ type: "put"; key: string; value: string } | { type: "del"; key: string }>(ops.length);
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    const key = SUB_PREFIX[op.sublevel] + op.key;
    if (op.type === "put") {
      const value = JSON.stringify(op.value);
      // As the json encoding refused it: undefined (or a function) has no JSON text.
      if (value === undefined) throw new TypeError(`the value of ${op.sublevel}/${op.key} cannot be stored: it has no JSON form`);
      out[i] = { type: "put", key, value };
    } else out[i] = { type: "del", key };
  }
  return out;
}

/** A stored record that does not match its schema (or is not JSON), as a listing reports it. */
export interface CorruptRecord {
  sublevel: SublevelName;
  key: string;
  problem: string;
}

export interface ListOptions {
  /**
   * Given, a corrupt record is skipped and reported here, so one bad record cannot break a listing.
   * Without it a corrupt record fails the whole list with CorruptRecordError.
   */
  onCorrupt?: (record: CorruptRecord) => void;
}

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

/**
 * Records answered from what the store wrote or read: sessions' metas (read when a turn starts and
 * again for its final batch) and consolidation states (read when a turn starts). Mirrored ranges (`<prefix><owner>KEY_END…`): a session's unanswered messages
 * and its open turns, listed when its actor starts (pending work: small).
 */
const CACHED_PREFIXES = [`${SUB_PREFIX.sessions}meta:`, `${SUB_PREFIX.meta}consolidated:`];
const MIRRORED_PREFIXES = [SUB_PREFIX.inbox, `${SUB_PREFIX.meta}open:`];
/** Those prefixes by the character after the leading "!" (the sublevel name's first): most ops' keys match none and are told so by it. */
const KNOWN_BY_CHAR = new Map<number, string[]>();
for (const p of [...CACHED_PREFIXES, ...MIRRORED_PREFIXES]) KNOWN_BY_CHAR.set(p.charCodeAt(1), [...(KNOWN_BY_CHAR.get(p.charCodeAt(1)) ?? []), p]);

/**
 * The ops of a write under the prefixes the record cache, the range mirror and the absence filter
 * keep (a few of a turn's ~34): picked once per write, so each of them goes through those alone.
 */
function knownOps(ops: EncodedOps): EncodedOps {
  const known: EncodedOps = [];
  for (const op of ops) {
    const candidates = KNOWN_BY_CHAR.get(op.key.charCodeAt(1));
    if (candidates === undefined) continue;
    for (const p of candidates) {
      if (op.key.startsWith(p)) {
        known.push(op);
        break;
      }
    }
  }
  return known;
}

export interface StoreOptions {
  /** `troupe doctor`: a missing store is not created, no holder file is written and writes are refused. */
  readOnly?: boolean;
  /** The wait before the first probe of a failing store, doubled after each failed probe up to maxMs. */
  probe?: { baseMs?: number; maxMs?: number };
  /** Where the store reports a failure, a probe and a recovery (the daemon's logger). */
  log?: { error(obj: object, msg: string): void; warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
}

/** How much a probe writes (and deletes) to check that the disk takes writes again. */
const PROBE_BYTES = 256 * 1024;

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
 * The least key above every key that starts with `prefix`, or undefined when there is none. LevelDB
 * orders keys by their UTF-8 bytes, that is by code point: the prefix with its last code point
 * raised by one. (`prefix + "\xff"` would miss keys whose next character is above U+00FF.)
 */
export function prefixEnd(prefix: string): string | undefined {
  // The usual case (a last character below the surrogates, raised to one below them too) without splitting the string.
  const last = prefix.charCodeAt(prefix.length - 1);
  if (last < 0xd7ff) return prefix.slice(0, -1) + String.fromCharCode(last + 1);
  const chars = [...prefix];
  while (chars.length > 0) {
    const c = chars.pop()!.codePointAt(0)!;
    if (c < 0x10ffff) return chars.join("") + String.fromCodePoint(c + 1 >= 0xd800 && c + 1 <= 0xdfff ? 0xe000 : c + 1);
  }
  return undefined;
}

type EncodedOps = ReturnType<typeof encodeOps>;
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
function batchEncoded(db: Db, ops: EncodedOps, sync: boolean): Promise<void> {
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
    await db.open({ createIfMissing: !opts.readOnly });
  } catch (err) {
    if (isLocked(err)) throw new StoreLockedError(path, await readHolderPid(path));
    throw (await diagnoseOpenFailure(path, err)) ?? err;
  }
  const dropped = opts.readOnly ? null : await droppedAtOpen(path);
  const cache = createRecordCache(CACHED_PREFIXES);
  const mirror = createRangeMirror(MIRRORED_PREFIXES);
  // Not for a read-only store: it is never written, and its reads go to LevelDB.
  const absence = createAbsenceFilter(CACHED_PREFIXES);
  const readStats: ReadStats = { gets: {}, lists: {}, fromMemory: 0 };
  /** The mirror from LevelDB (a read-only store keeps none: it is never written, and reads go to LevelDB). */
  async function buildMirror(): Promise<void> {
    const rows: Array<[string, string]> = [];
    for (const p of MIRRORED_PREFIXES) rows.push(...(await db.iterator({ gte: p, lt: prefixEnd(p)! }).all()));
    mirror.build(rows);
  }
  if (!opts.readOnly) {
    await buildMirror();
    // Keys only, a thousand at a time: the sessions' metas and consolidation states, one each per session.
    for (const p of CACHED_PREFIXES) {
      const keys = db.keys({ gte: p, lt: prefixEnd(p)! });
      try {
        for (let some = await keys.nextv(1_000); some.length; some = await keys.nextv(1_000)) absence.add(some);
      } finally {
        await keys.close();
      }
    }
    absence.built();
  }
  /** Numbers writes in the order they are handed in, so the cache keeps the newest of a key. */
  let writeSeq = 0;
  if (!opts.readOnly) await writeFile(join(path, HOLDER_FILE), JSON.stringify({ pid: process.pid, since: new Date().toISOString() }));

  const health = createStoreHealth();

  let closed = false;
  let probeTimer: NodeJS.Timeout | undefined;
  /** Set while the store is being reopened: every operation waits for it. */
  let reopening: Promise<void> | undefined;
  let recoveryHandler: (() => Promise<void>) | undefined;
  const baseMs = opts.probe?.baseMs ?? 1_000;
  const maxMs = opts.probe?.maxMs ?? 15_000;

  /** A failure of the disk: writes are refused from now on, until a probe finds it writable and the store is reopened. */
  function failing(failure: StoreFailure, err: unknown): StoreUnavailableError {
    if (health.state !== "failing") {
      opts.log?.error({ err, failure }, "store write failed; refusing writes until the disk takes them again");
      health.fail(failure, Date.now());
      scheduleProbe();
    }
    return new StoreUnavailableError(failure, { cause: err });
  }

  function scheduleProbe() {
    if (closed || probeTimer) return;
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

  /** Closes and opens LevelDB again: it keeps a failed background write as its state until then. */
  async function reopen(): Promise<void> {
    await drainAll();
    await db.close().catch(() => undefined);
    db = openLevel(path);
    await db.open({ createIfMissing: false });
    cache.clear();
    await buildMirror();
    await db.batch(encodeOps([{ type: "put", sublevel: "meta", key: "store-probe", value: { at: Date.now() } }]), { sync: true });
    await db.batch(encodeOps([{ type: "del", sublevel: "meta", key: "store-probe" }]), { sync: true });
  }

  async function probe(): Promise<void> {
    if (closed || health.state !== "failing") return;
    health.probed();
    if (!(await diskWritable())) return scheduleProbe();
    let done!: () => void;
    reopening = new Promise((resolve) => (done = resolve));
    try {
      await reopen();
    } catch (err) {
      opts.log?.warn({ err, probes: health.snapshot().probes }, "store still not writable; probing again");
      return scheduleProbe();
    } finally {
      reopening = undefined;
      done();
    }
    if (closed) return;
    opts.log?.info({ failure: health.snapshot().failure, probes: health.snapshot().probes }, "store writable again; reopened it, resuming interrupted work");
    health.set("recovering");
    try {
      await recoveryHandler?.();
    } catch (err) {
      opts.log?.error({ err }, "resuming work after the store recovered failed");
    }
    if (health.snapshot().state === "recovering") health.set("ok");
  }

  async function write(encoded: EncodedOps, sync: boolean): Promise<void> {
    if (health.state === "failing") throw new StoreUnavailableError(health.snapshot().failure ?? "io-error");
    if (reopening) await reopening;
    try {
      const injected = injectedDiskFull(path);
      if (injected) throw injected;
      const seq = ++writeSeq;
      const known = knownOps(encoded);
      absence.writing(known);
      cache.writing(known);
      try {
        await batchEncoded(db, encoded, sync);
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
      throw failing(failure, err);
    }
  }
  const synced = createGroupCommit<EncodedOps[number]>((ops) => write(ops, true));
  /**
   * Unsynced batches (a tool's result, which the next synced checkpoint makes durable) coalesce
   * too: each is one call into LevelDB's thread pool, which costs more than the write itself; each
   * caller still waits for its own write, so its order against its next write is kept.
   */
  const unsynced = createGroupCommit<EncodedOps[number]>((ops) => write(ops, false));
  const drainAll = async () => {
    await synced.drain();
    await unsynced.drain();
  };

  /** A read while the store is closed for a probe is refused as the failure it is. */
  async function reading<T>(read: () => Promise<T>): Promise<T> {
    if (reopening) await reopening;
    try {
      return await read();
    } catch (err) {
      const failure = health.snapshot().failure;
      if (failure && (err as { code?: string }).code === "LEVEL_DATABASE_NOT_OPEN") throw new StoreUnavailableError(failure, { cause: err });
      throw err;
    }
  }
  /**
   * Values are read as text and decoded here, so an undecodable one is a corrupt record, not a
   * LEVEL_DECODE_ERROR. Text this process wrote itself (`own`: answered from the record cache or the
   * range mirror, see known.ts) is JSON text of a value its writer built as the record's type, so it
   * is parsed but not checked against the schema again (the issue's "no zod parse of data we just
   * wrote": a session's meta read back at each turn, its inbox rows); whatever comes from LevelDB
   * (another run's records, at open or after a reopen) is checked.
   */
  function parse<S extends z.ZodType>(sublevel: SublevelName, key: string, text: string, schema: S, own = false): { value: z.infer<S> } | { corrupt: CorruptRecord } {
    if (own) return { value: JSON.parse(text) as z.infer<S> };
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return { corrupt: { sublevel, key, problem: "not valid JSON" } };
    }
    const result = schema.safeParse(value);
    if (result.success) return { value: result.data };
    const issue = result.error.issues[0];
    const where = issue?.path.length ? `${issue.path.map(String).join(".")}: ` : "";
    return { corrupt: { sublevel, key, problem: `${where}${issue?.message ?? "does not match its schema"}` } };
  }
  /** Listed rows (root keys, stored text) as records of the sublevel. */
  function decodeRows<S extends z.ZodType>(sublevel: SublevelName, rows: Array<[string, string, boolean?]>, schema: S, opts: ListOptions): Array<{ key: string; value: z.infer<S> }> {
    const at = SUB_PREFIX[sublevel];
    const out: Array<{ key: string; value: z.infer<S> }> = [];
    for (const [prefixed, text, own] of rows) {
      const key = prefixed.slice(at.length);
      const parsed = parse(sublevel, key, text, schema, own);
      if ("value" in parsed) out.push({ key, value: parsed.value });
      else if (opts.onCorrupt) opts.onCorrupt(parsed.corrupt);
      else throw raise(parsed.corrupt);
    }
    return out;
  }
  const raise = (c: CorruptRecord) => new CorruptRecordError(`record ${c.sublevel}/${c.key} does not match its schema: ${c.problem}`);

  return {
    path,
    commitStats: synced.stats,
    unsyncedStats: unsynced.stats,
    readStats,
    health,
    droppedAtOpen: dropped,
    onRecovered(handler) {
      recoveryHandler = handler;
    },
    async get(sublevel, key, schema) {
      const rootKey = SUB_PREFIX[sublevel] + key;
      const known = closed || reopening ? "unknown" : absence.absent(rootKey) ? { text: undefined, own: true } : cache.lookup(rootKey);
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
      const parsed = parse(sublevel, key, text, schema, own);
      if ("corrupt" in parsed) throw raise(parsed.corrupt);
      return parsed.value;
    },
    async list(sublevel, schema, opts = {}) {
      const end = opts.prefix === undefined ? undefined : prefixEnd(opts.prefix);
      const gte = opts.gte ?? (opts.prefix || undefined);
      const lt = opts.lt ?? end;
      const at = SUB_PREFIX[sublevel];
      const range = { gte: gte === undefined ? at : at + gte, lt: lt === undefined ? SUB_END[sublevel] : at + lt };
      const mirrored = closed || reopening ? undefined : mirror.rows(range.gte, range.lt);
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
      // Encoded here, so a value with no JSON form fails its own batch, not the group it would join.
      const encoded = encodeOps(ops);
      if (batchOpts.sync) return synced.commit(encoded);
      // While a synced write is in flight, an unsynced batch rides with the next synced group (written
      // synced: stronger, and one LevelDB call fewer) instead of a write of its own.
      return synced.join(encoded) ?? unsynced.commit(encoded);
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
      clearTimeout(probeTimer);
      if (reopening) await reopening;
      await drainAll();
      await db.close();
    },
  };
}
