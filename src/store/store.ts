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

export interface Store {
  readonly path: string;
  get<S extends z.ZodType>(sublevel: SublevelName, key: string, schema: S): Promise<z.infer<S> | undefined>;
  /** All records of a sublevel in key order, optionally within a key prefix. */
  list<S extends z.ZodType>(
    sublevel: SublevelName,
    schema: S,
    opts?: { prefix?: string; limit?: number },
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

export async function openStore(path: string): Promise<Store> {
  await mkdir(path, { recursive: true });
  const db: Db = new Level<string, unknown>(path, { valueEncoding: "json" });
  try {
    await db.open();
  } catch (err) {
    if (isLocked(err)) throw new StoreLockedError(path, await readHolderPid(path));
    throw err;
  }
  await writeFile(join(path, HOLDER_FILE), JSON.stringify({ pid: process.pid, since: new Date().toISOString() }));

  const subs = new Map<SublevelName, Sub>(SUBLEVELS.map((name) => [name, makeSub(db, name)]));
  const sub = (name: SublevelName): Sub => subs.get(name) as Sub;
  const toLevelOps = (ops: StoreOp[]) =>
    ops.map((op) =>
      op.type === "put"
        ? { type: "put" as const, sublevel: sub(op.sublevel), key: op.key, value: op.value }
        : { type: "del" as const, sublevel: sub(op.sublevel), key: op.key },
    );
  const synced = createGroupCommit<StoreOp>((ops) => db.batch(toLevelOps(ops), { sync: true }));

  function parse<S extends z.ZodType>(sublevel: SublevelName, key: string, value: unknown, schema: S): z.infer<S> {
    const result = schema.safeParse(value);
    if (!result.success) {
      throw new CorruptRecordError(`record ${sublevel}/${key} does not match its schema: ${result.error.issues[0]?.message}`);
    }
    return result.data;
  }

  return {
    path,
    commitStats: synced.stats,
    async get(sublevel, key, schema) {
      const value = await sub(sublevel).get(key);
      return value === undefined ? undefined : parse(sublevel, key, value, schema);
    },
    async list(sublevel, schema, opts = {}) {
      const end = opts.prefix === undefined ? undefined : prefixEnd(opts.prefix);
      const range = { ...(opts.prefix ? { gte: opts.prefix } : {}), ...(end !== undefined ? { lt: end } : {}) };
      const out: Array<{ key: string; value: z.infer<typeof schema> }> = [];
      for await (const [key, value] of sub(sublevel).iterator({ ...range, limit: opts.limit ?? -1 })) {
        out.push({ key, value: parse(sublevel, key, value, schema) });
      }
      return out;
    },
    async batch(ops, opts = {}) {
      if (ops.length === 0) return;
      if (opts.sync) return synced.commit(ops);
      await db.batch(toLevelOps(ops));
    },
    async close() {
      await synced.drain();
      await db.close();
    },
  };
}
