import { Level } from "level";

/**
 * How the store's records lie in LevelDB: each sublevel's keys under a prefix of its own, values
 * as JSON text; the batch ops written for store ops; the key ranges and the ops the store's
 * in-memory indexes (known.ts) keep.
 */

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
export type Db = Level<string, string>;
export const openLevel = (path: string): Db => new Level<string, string>(path, { keyEncoding: "utf8", valueEncoding: "utf8" });
export const SUB_PREFIX = Object.fromEntries(SUBLEVELS.map((name) => [name, `!${name}!`])) as Record<SublevelName, string>;
/** The least key above every key of a sublevel ("!name" then the character after "!"). */
export const SUB_END = Object.fromEntries(SUBLEVELS.map((name) => [name, `!${name}"`])) as Record<SublevelName, string>;

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

export type EncodedOps = ReturnType<typeof encodeOps>;

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

/**
 * Records answered from what the store wrote or read: sessions' metas (read when a turn starts and
 * again for its final batch) and consolidation states (read when a turn starts). Mirrored ranges (`<prefix><owner>KEY_END…`): a session's unanswered messages
 * and its open turns, listed when its actor starts (pending work: small).
 */
export const CACHED_PREFIXES = [`${SUB_PREFIX.sessions}meta:`, `${SUB_PREFIX.meta}consolidated:`];
export const MIRRORED_PREFIXES = [SUB_PREFIX.inbox, `${SUB_PREFIX.meta}open:`];
/** Those prefixes by the character after the leading "!" (the sublevel name's first): most ops' keys match none and are told so by it. */
const KNOWN_BY_CHAR = new Map<number, string[]>();
for (const p of [...CACHED_PREFIXES, ...MIRRORED_PREFIXES]) KNOWN_BY_CHAR.set(p.charCodeAt(1), [...(KNOWN_BY_CHAR.get(p.charCodeAt(1)) ?? []), p]);

/**
 * The ops of a write under the prefixes the record cache, the range mirror and the absence filter
 * keep (a few of a turn's ~34): picked once per write, so each of them goes through those alone.
 */
export function knownOps(ops: EncodedOps): EncodedOps {
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
