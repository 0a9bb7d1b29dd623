import { existsSync } from "node:fs";
import { mkdir, open, readFile, rename, stat } from "node:fs/promises";
import { join } from "node:path";
import { historyTimestamp, parseHistory, type HistoryEntry } from "./history-entry.js";

/**
 * nanobot's memory files, in the same places and formats, so a nanobot workspace works unchanged:
 * SOUL.md, USER.md, memory/MEMORY.md (long-term, edited by Dream), memory/history.jsonl
 * (medium-term, append-only, one JSON object a line), memory/.cursor (the last cursor handed
 * out) and memory/.dream_cursor (the last cursor Dream digested).
 */

export const MAX_HISTORY_ENTRIES = 1000;
/** A history entry longer than this is cut: a summary echoing its input must not bloat every prompt. */
export const HISTORY_ENTRY_MAX_CHARS = 64_000;

export interface MemoryPaths {
  workspace: string;
  soul: string;
  user: string;
  memory: string;
  history: string;
  legacyHistory: string;
  cursor: string;
  dreamCursor: string;
}

export function memoryPaths(workspace: string): MemoryPaths {
  const dir = join(workspace, "memory");
  return {
    workspace,
    soul: join(workspace, "SOUL.md"),
    user: join(workspace, "USER.md"),
    memory: join(dir, "MEMORY.md"),
    history: join(dir, "history.jsonl"),
    legacyHistory: join(dir, "HISTORY.md"),
    cursor: join(dir, ".cursor"),
    dreamCursor: join(dir, ".dream_cursor"),
  };
}

export async function readText(path: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return "";
    throw err;
  }
}

async function readCounter(path: string): Promise<number | undefined> {
  const n = Number.parseInt((await readText(path)).trim(), 10);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** Writes a file so that a crash leaves the old or the new content, never a mix. */
export async function writeAtomic(path: string, text: string): Promise<void> {
  const tmp = `${path}.tmp`;
  const fh = await open(tmp, "w");
  try {
    await fh.writeFile(text, "utf8");
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, path);
}

export interface MemoryFiles {
  paths: MemoryPaths;
  readHistory(): Promise<HistoryEntry[]>;
  /** Appends an entry (synced) and returns its cursor; drops the oldest digested entries past the cap. */
  appendHistory(entry: { content: string; sessionKey?: string; archived?: HistoryEntry["archived"] }): Promise<number>;
  dreamCursor(): Promise<number>;
  setDreamCursor(cursor: number): Promise<void>;
  /** The last cursor handed out (0 before any). */
  latestCursor(): Promise<number>;
  /** Entries Dream has not digested yet, oldest first. */
  undigested(): Promise<HistoryEntry[]>;
}

export interface MemoryFilesOptions {
  now?: () => number;
  timezone?: string;
  maxEntries?: number;
}

/** Appends from one process are serialised per workspace (cursor allocation and the write are one step). */
const chains = new Map<string, Promise<unknown>>();
function serialised<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const prev = chains.get(key) ?? Promise.resolve();
  const next = prev.then(fn, fn);
  const tail = next.catch(() => undefined);
  chains.set(key, tail);
  void tail.then(() => chains.get(key) === tail && chains.delete(key));
  return next;
}

export function createMemoryFiles(workspace: string, opts: MemoryFilesOptions = {}): MemoryFiles {
  const paths = memoryPaths(workspace);
  const now = opts.now ?? Date.now;
  const maxEntries = opts.maxEntries ?? MAX_HISTORY_ENTRIES;
  let migrated: Promise<void> | undefined;
  const ready = () => (migrated ??= mkdir(join(workspace, "memory"), { recursive: true }).then(async () => void (await migrateLegacyHistory(paths, now))));

  // The history is read for every prompt; it is parsed again only when the file changed.
  let cached: { size: number; mtimeMs: number; entries: HistoryEntry[] } | undefined;
  const readHistory = async (): Promise<HistoryEntry[]> => {
    await ready();
    const st = await stat(paths.history).catch(() => undefined);
    if (!st) return [];
    if (cached && cached.size === st.size && cached.mtimeMs === st.mtimeMs) return cached.entries;
    const entries = parseHistory(await readText(paths.history));
    cached = { size: st.size, mtimeMs: st.mtimeMs, entries };
    return entries;
  };
  const dreamCursor = async () => (await readCounter(paths.dreamCursor)) ?? 0;
  const latestCursor = async () => {
    // A loop, not Math.max(...cursors): past ~120,000 arguments a spread call throws, and undigested
    // entries are never dropped (a busy daemon's history outgrows MAX_HISTORY_ENTRIES while Dream catches up).
    let latest = (await readCounter(paths.cursor)) ?? 0;
    for (const e of await readHistory()) if (e.cursor > latest) latest = e.cursor;
    return latest;
  };

  async function compact(entries: HistoryEntry[]): Promise<void> {
    if (entries.length <= maxEntries) return;
    // Entries Dream has not digested are kept even past the cap: dropping them would lose them for good.
    const digested = await dreamCursor();
    const firstUndigested = entries.findIndex((e) => e.cursor > digested);
    const keepFrom = Math.min(entries.length - maxEntries, firstUndigested < 0 ? entries.length : firstUndigested);
    if (keepFrom <= 0) return;
    await writeAtomic(paths.history, entries.slice(keepFrom).map((e) => JSON.stringify(e)).join("\n") + "\n");
  }

  return {
    paths,
    readHistory,
    dreamCursor,
    latestCursor,
    async undigested() {
      const since = await dreamCursor();
      return (await readHistory()).filter((e) => e.cursor > since);
    },
    async setDreamCursor(cursor) {
      await ready();
      await writeAtomic(paths.dreamCursor, String(cursor));
    },
    appendHistory: (entry) =>
      serialised(paths.history, async () => {
        await ready();
        const cursor = (await latestCursor()) + 1;
        // What latestCursor just read (the file as it was): the entries after this append are those plus this one.
        const before = cached;
        const content = entry.content.length > HISTORY_ENTRY_MAX_CHARS ? `${entry.content.slice(0, HISTORY_ENTRY_MAX_CHARS)}\n... (truncated)` : entry.content;
        const record: HistoryEntry = {
          cursor,
          timestamp: historyTimestamp(new Date(now()), opts.timezone),
          content: content.trimEnd(),
          ...(entry.sessionKey ? { session_key: entry.sessionKey } : {}),
          ...(entry.archived ? { archived: entry.archived } : {}),
        };
        const fh = await open(paths.history, "a+");
        let entries: HistoryEntry[] | undefined;
        try {
          // A torn last line (a crash mid-write) must not swallow this entry: start on a fresh line.
          const { size } = await fh.stat();
          let lead = "";
          if (size > 0) {
            const last = Buffer.alloc(1);
            await fh.read(last, 0, 1, size - 1);
            if (last.toString() !== "\n") lead = "\n";
          }
          const line = `${lead}${JSON.stringify(record)}\n`;
          await fh.appendFile(line, "utf8");
          await fh.sync();
          // Nobody else wrote in between (the file grew by this line alone from what was read): the
          // history is not read and parsed again (it was twice per append, the whole file each time,
          // which made every consolidation cost O(history) on a queue all sessions share).
          const after = await fh.stat();
          if (before && before.size === size && after.size === size + Buffer.byteLength(line)) {
            entries = [...before.entries, record];
            cached = { size: after.size, mtimeMs: after.mtimeMs, entries };
          }
        } finally {
          await fh.close();
        }
        await writeAtomic(paths.cursor, String(cursor));
        await compact(entries ?? parseHistory(await readText(paths.history)));
        return cursor;
      }),
  };
}

const LEGACY_STAMP = /^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2})\]\s*/;
const LEGACY_ENTRY_START = /^\[\d{4}-\d{2}-\d{2}[^\]]*\]\s*/;
/** A line of a raw dump (`[ts] USER: ...`) inside a [RAW] entry belongs to that entry. */
const LEGACY_RAW_LINE = /^\[\d{4}-\d{2}-\d{2}[^\]]*\]\s+[A-Z][A-Z0-9_]*(?:\s+\[tools:\s*[^\]]+\])?:/;

/** nanobot's HISTORY.md split into entries: a blank line or a `[YYYY-MM-DD ...]` line starts the next. */
export function splitLegacyHistory(text: string): string[] {
  const lines = text.replace(/\r\n?/g, "\n").trim().split("\n");
  const chunks: string[] = [];
  let current: string[] = [];
  let afterBlank = false;
  const isRaw = () => {
    const first = current.find((l) => l.trim()) ?? "";
    const m = LEGACY_STAMP.exec(first);
    return !!m && first.slice(m[0].length).trimStart().startsWith("[RAW]");
  };
  for (const line of lines) {
    const startsEntry = current.length > 0 && LEGACY_ENTRY_START.test(line) && !(isRaw() && LEGACY_RAW_LINE.test(line));
    if ((afterBlank && line.trim() && current.length) || startsEntry) {
      chunks.push(current.join("\n").trim());
      current = [line];
      afterBlank = false;
      continue;
    }
    current.push(line);
    afterBlank = !line.trim();
  }
  if (current.length) chunks.push(current.join("\n").trim());
  return chunks.filter(Boolean);
}

/**
 * A nanobot workspace from before history.jsonl keeps memory/HISTORY.md: it is migrated once (when
 * history.jsonl is missing or empty) and kept as HISTORY.md.bak. Migrated entries count as digested,
 * so Dream does not replay the whole archive at its first run.
 */
export async function migrateLegacyHistory(paths: MemoryPaths, now: () => number = Date.now): Promise<number> {
  if (!existsSync(paths.legacyHistory)) return 0;
  if (existsSync(paths.history) && (await stat(paths.history)).size > 0) return 0;
  const text = await readFile(paths.legacyHistory, "utf8");
  const fallback = historyTimestamp(new Date((await stat(paths.legacyHistory)).mtimeMs || now()));
  const entries: HistoryEntry[] = splitLegacyHistory(text).map((chunk, i) => {
    const m = LEGACY_STAMP.exec(chunk);
    const rest = m ? chunk.slice(m[0].length).trimStart() : "";
    return { cursor: i + 1, timestamp: m ? m[1]! : fallback, content: m && rest ? rest : chunk };
  });
  if (entries.length) {
    await writeAtomic(paths.history, entries.map((e) => JSON.stringify(e)).join("\n") + "\n");
    await writeAtomic(paths.cursor, String(entries.length));
    await writeAtomic(paths.dreamCursor, String(entries.length));
  }
  let backup = `${paths.legacyHistory}.bak`;
  for (let n = 2; existsSync(backup); n++) backup = `${paths.legacyHistory}.bak.${n}`;
  await rename(paths.legacyHistory, backup);
  return entries.length;
}
