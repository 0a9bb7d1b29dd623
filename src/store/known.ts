import { KEY_END } from "../session-key.js";

/**
 * What the store knows of its own writes. LevelDB allows one process, so every write of an open
 * store goes through it: records it wrote, and which keys exist in a few small indexed ranges, can
 * answer a read without a LevelDB call (each costs a hop to LevelDB's thread pool and back, which
 * on a loaded machine cost more than the read). Keys here are the root database's (sublevel-prefixed).
 *
 * Both are updated once a write succeeded, in the order writes were handed in; a failed write may
 * or may not have reached the disk, so it empties the cache and stops the index until it is rebuilt
 * from LevelDB (at open and after a reopen).
 */

/** A record the cache knows is not stored (it wrote its deletion). */
const ABSENT = Symbol("absent");
/** `own`: the text is what this process wrote (not read from LevelDB), so it was made from a value its writer built. */
type Entry = { seq: number; text: string | typeof ABSENT; own: boolean };

type EncodedOp = { type: "put"; key: string; value: string } | { type: "del"; key: string };

/**
 * The last value of keys under the given prefixes (at most `max`, oldest dropped first): written by
 * this process, or read from LevelDB when no write of the key was under way during the read (a
 * write landing between the read and its answer would otherwise leave the older value here). A key
 * it holds needs no LevelDB call; one it does not is read from LevelDB as before.
 */
export function createRecordCache(prefixes: string[], max = 2_048) {
  const entries = new Map<string, Entry>();
  /** Cached keys in writes handed to LevelDB and not finished, with how many. */
  const pending = new Map<string, number>();
  /** Bumped when entries go (cleared, the oldest dropped): a read under way may not add to it. */
  let generation = 0;
  const cached = (key: string) => prefixes.some((p) => key.startsWith(p));
  const set = (key: string, entry: Entry) => {
    entries.delete(key);
    entries.set(key, entry);
    if (entries.size > max) {
      entries.delete(entries.keys().next().value!);
      generation++;
    }
  };
  return {
    cached,
    /** The stored text, undefined for a record known to be absent, or `unknown`; `own` when this process wrote it. */
    lookup(key: string): { text: string | undefined; own: boolean } | "unknown" {
      const e = entries.get(key);
      if (!e) return "unknown";
      return { text: e.text === ABSENT ? undefined : e.text, own: e.own };
    },
    /** Before reading a key from LevelDB: what `read` needs to tell whether the answer may be kept. */
    reading(key: string): number | undefined {
      return cached(key) && !pending.has(key) ? generation : undefined;
    },
    /** LevelDB answered a read begun at `ticket`: kept only if no write of the key began or ended since. */
    read(key: string, ticket: number | undefined, text: string | undefined): void {
      if (ticket === undefined || ticket !== generation || pending.has(key) || entries.has(key)) return;
      // Seq 0: any write of the key, however late it finishes, is newer.
      set(key, { seq: 0, text: text ?? ABSENT, own: false });
    },
    /** A write is handed to LevelDB. */
    writing(ops: EncodedOp[]): void {
      for (const op of ops) if (cached(op.key)) pending.set(op.key, (pending.get(op.key) ?? 0) + 1);
    },
    /** A write numbered `seq` (in the order writes were handed in) ended; `ok` when it succeeded. */
    written(ops: EncodedOp[], seq: number, ok = true): void {
      for (const op of ops) {
        if (!cached(op.key)) continue;
        const n = (pending.get(op.key) ?? 1) - 1;
        if (n > 0) pending.set(op.key, n);
        else pending.delete(op.key);
        if (!ok) continue;
        const e = entries.get(op.key);
        // A later write of the key finished first: it holds the newer value.
        if (e && e.seq > seq) continue;
        set(op.key, { seq, text: op.type === "put" ? op.value : ABSENT, own: true });
      }
    },
    clear(): void {
      entries.clear();
      generation++;
    },
    get size() {
      return entries.size;
    },
  };
}

/** A mirrored record's stored text, and whether this process wrote it. */
type MirroredText = [text: string, own: boolean];

/** LevelDB's key order: by UTF-8 bytes, that is by code point (JS compares UTF-16 code units). */
const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/**
 * A copy of small ranges whose keys are `<prefix><owner>KEY_END<rest>` (the sessions' unanswered
 * messages, their open turns): a listing of one owner's keys is answered from it, without a LevelDB
 * iterator. What they hold is pending work, so they stay small. Built from LevelDB and kept by
 * every successful write.
 */
export function createRangeMirror(prefixes: string[]) {
  /**
   * Records by owner prefix (`<prefix><owner>KEY_END`), key → stored text and whether this process
   * wrote it (true) or it was read from LevelDB (false); undefined while not built.
   */
  let owners: Map<string, Map<string, MirroredText>> | undefined;
  const ownerOf = (key: string): string | undefined => {
    const prefix = prefixes.find((p) => key.startsWith(p));
    if (prefix === undefined) return undefined;
    const end = key.indexOf(KEY_END, prefix.length);
    return end < 0 ? undefined : key.slice(0, end + 1);
  };
  const put = (map: Map<string, Map<string, MirroredText>>, key: string, text: string, own: boolean) => {
    const owner = ownerOf(key);
    if (owner === undefined) return;
    let records = map.get(owner);
    if (!records) map.set(owner, (records = new Map()));
    records.set(key, [text, own]);
  };
  return {
    /** Built from every record LevelDB holds in the ranges. */
    build(rows: Iterable<[string, string]>): void {
      const map = new Map<string, Map<string, MirroredText>>();
      for (const [key, text] of rows) put(map, key, text, false);
      owners = map;
    },
    /** Stops answering until built again (a write failed: what reached the disk is unknown). */
    invalidate(): void {
      owners = undefined;
    },
    written(ops: EncodedOp[]): void {
      if (!owners) return;
      for (const op of ops) {
        if (op.type === "put") put(owners, op.key, op.value, true);
        else {
          const owner = ownerOf(op.key);
          const records = owner === undefined ? undefined : owners.get(owner);
          if (!records) continue;
          records.delete(op.key);
          if (records.size === 0) owners.delete(owner!);
        }
      }
    },
    /**
     * The records of the listing `[gte, lt)` in key order when it is exactly one owner's range
     * (`gte` its owner prefix, `lt` the key after every key under it); undefined when the mirror
     * cannot answer it (another range, or not built). Each row's third element: this process wrote it.
     */
    rows(gte: string, lt: string): Array<[string, string, boolean]> | undefined {
      if (!owners || !gte.endsWith(KEY_END) || ownerOf(gte) !== gte) return undefined;
      if (lt !== gte.slice(0, -1) + String.fromCharCode(KEY_END.charCodeAt(0) + 1)) return undefined;
      const records = owners.get(gte);
      if (!records) return [];
      const rows: Array<[string, string, boolean]> = [];
      for (const [key, [text, own]] of records) rows.push([key, text, own]);
      return rows.sort((a, b) => byBytes(a[0], b[0]));
    },
    /** How many owners have records (for tests and the bench). */
    get owners(): number {
      return owners?.size ?? 0;
    },
  };
}

/**
 * Which keys under the given prefixes may be stored: a Bloom filter of every key LevelDB held
 * there at open and every key this process has since handed to a write (added before the write
 * starts, failed writes included: it only ever says "maybe" too often, never "absent" wrongly). A
 * key it has never seen is known to be absent without a LevelDB read: a new session's meta and
 * consolidation state, read when its first turn starts. Deletions are not taken out (a deleted key
 * is read from LevelDB, or from the record cache). Fixed size (64 KB): with many more keys than it
 * was made for it answers "maybe" more often, and LevelDB is asked as before.
 */
export function createAbsenceFilter(prefixes: string[], bits = 1 << 19) {
  const words = new Uint32Array(bits >>> 5);
  const mask = bits - 1;
  let built = false;
  const covered = (key: string) => prefixes.some((p) => key.startsWith(p));
  /** Two 32-bit hashes of the key (FNV-1a over UTF-16 units, with two seeds); 4 probes by double hashing. */
  const probes = (key: string): [number, number] => {
    let a = 0x811c9dc5;
    let b = 0x01000193 ^ key.length;
    for (let i = 0; i < key.length; i++) {
      const c = key.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x5bd1e995);
    }
    return [a >>> 0, (b ^ (b >>> 15)) >>> 0 | 1];
  };
  const add = (key: string) => {
    const [h1, h2] = probes(key);
    for (let i = 0; i < 4; i++) {
      const bit = (h1 + i * h2) & mask;
      words[bit >>> 5]! |= 1 << (bit & 31);
    }
  };
  return {
    covered,
    /** Keys LevelDB holds under the prefixes (at open), then `built()` once they all were given. */
    add(keys: Iterable<string>): void {
      for (const key of keys) add(key);
    },
    built(): void {
      built = true;
    },
    /** A write is about to be handed to LevelDB: its keys may be stored from now on. */
    writing(ops: EncodedOp[]): void {
      for (const op of ops) if (op.type === "put" && covered(op.key)) add(op.key);
    },
    /** Whether the key is surely not stored (false: it may be). */
    absent(key: string): boolean {
      if (!built || !covered(key)) return false;
      const [h1, h2] = probes(key);
      for (let i = 0; i < 4; i++) {
        const bit = (h1 + i * h2) & mask;
        if ((words[bit >>> 5]! & (1 << (bit & 31))) === 0) return true;
      }
      return false;
    },
  };
}
