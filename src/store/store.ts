import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Level } from "level";
import type { z } from "zod";
import { CorruptRecordError, StoreLockedError } from "../errors.js";
import { createGroupCommit, type GroupCommitStats } from "./group-commit.js";

export const SUBLEVELS = ["sessions", "turns", "journal", "inbox", "outbox", "cron", "meta", "subagents"] as const;
export type SublevelName = (typeof SUBLEVELS)[number];

export type StoreOp =
  | { type: "put"; sublevel: SublevelName; key: string; value: unknown }
  | { type: "del"; sublevel: SublevelName; key: string };

type Db = Level<string, unknown>;
const makeSub = (db: Db, name: string) => db.sublevel<string, unknown>(name, { valueEncoding: "json" });
type Sub = ReturnType<typeof makeSub>;

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
  close(): Promise<void>;
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
 * The least key above every key that starts with `prefix`, or undefined when there is none. LevelDB
 * orders keys by their UTF-8 bytes, that is by code point: the prefix with its last code point
 * raised by one. (`prefix + "\xff"` would miss keys whose next character is above U+00FF.)
 */
export function prefixEnd(prefix: string): string | undefined {
  const chars = [...prefix];
  while (chars.length > 0) {
    const c = chars.pop()!.codePointAt(0)!;
    if (c < 0x10ffff) return chars.join("") + String.fromCodePoint(c + 1 >= 0xd800 && c + 1 <= 0xdfff ? 0xe000 : c + 1);
  }
  return undefined;
}

/**
 * Opens the store (LevelDB allows one process at a time). readOnly (`troupe doctor`): a missing store
 * is not created, no holder file is written and writes are refused.
 */
export async function openStore(path: string, opts: { readOnly?: boolean } = {}): Promise<Store> {
  if (!opts.readOnly) await mkdir(path, { recursive: true });
  const db: Db = new Level<string, unknown>(path, { valueEncoding: "json" });
  try {
    await db.open({ createIfMissing: !opts.readOnly });
  } catch (err) {
    if (isLocked(err)) throw new StoreLockedError(path, await readHolderPid(path));
    throw err;
  }
  if (!opts.readOnly) await writeFile(join(path, HOLDER_FILE), JSON.stringify({ pid: process.pid, since: new Date().toISOString() }));

  const subs = new Map<SublevelName, Sub>(SUBLEVELS.map((name) => [name, makeSub(db, name)]));
  const sub = (name: SublevelName): Sub => subs.get(name) as Sub;
  const toLevelOps = (ops: StoreOp[]) =>
    ops.map((op) =>
      op.type === "put"
        ? { type: "put" as const, sublevel: sub(op.sublevel), key: op.key, value: op.value }
        : { type: "del" as const, sublevel: sub(op.sublevel), key: op.key },
    );
  const synced = createGroupCommit<StoreOp>((ops) => db.batch(toLevelOps(ops), { sync: true }));

  /** Values are read as text and decoded here, so an undecodable one is a corrupt record, not a LEVEL_DECODE_ERROR. */
  function parse<S extends z.ZodType>(sublevel: SublevelName, key: string, text: string, schema: S): { value: z.infer<S> } | { corrupt: CorruptRecord } {
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
  const raise = (c: CorruptRecord) => new CorruptRecordError(`record ${c.sublevel}/${c.key} does not match its schema: ${c.problem}`);

  return {
    path,
    commitStats: synced.stats,
    async get(sublevel, key, schema) {
      const text = (await sub(sublevel).get(key, { valueEncoding: "utf8" })) as string | undefined;
      if (text === undefined) return undefined;
      const parsed = parse(sublevel, key, text, schema);
      if ("corrupt" in parsed) throw raise(parsed.corrupt);
      return parsed.value;
    },
    async list(sublevel, schema, opts = {}) {
      const end = opts.prefix === undefined ? undefined : prefixEnd(opts.prefix);
      const gte = opts.gte ?? (opts.prefix || undefined);
      const lt = opts.lt ?? end;
      const range = { ...(gte !== undefined ? { gte } : {}), ...(lt !== undefined ? { lt } : {}) };
      const out: Array<{ key: string; value: z.infer<typeof schema> }> = [];
      for await (const [key, text] of sub(sublevel).iterator<string, string>({ ...range, limit: opts.limit ?? -1, valueEncoding: "utf8" })) {
        const parsed = parse(sublevel, key, text, schema);
        if ("value" in parsed) out.push({ key, value: parsed.value });
        else if (opts.onCorrupt) opts.onCorrupt(parsed.corrupt);
        else throw raise(parsed.corrupt);
      }
      return out;
    },
    async batch(ops, batchOpts = {}) {
      if (opts.readOnly) throw new Error(`the store at ${path} was opened read-only`);
      if (ops.length === 0) return;
      if (batchOpts.sync) return synced.commit(ops);
      await db.batch(toLevelOps(ops));
    },
    async close() {
      await synced.drain();
      await db.close();
    },
  };
}
