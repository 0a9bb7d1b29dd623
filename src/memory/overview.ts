import { stat } from "node:fs/promises";
import type { Store } from "../store/store.js";
import { readDreamRecord, type DreamRecord } from "./dream-record.js";
import { createMemoryFiles } from "./files.js";

export interface MemoryOverview {
  workspace: string;
  files: Array<{ path: string; bytes: number | null }>;
  history: { entries: number; firstCursor: number | null; lastCursor: number };
  dreamCursor: number;
  /** Entries Dream has not digested yet. */
  undigested: number;
  dream: { nextAt: number | null; run: DreamRecord["run"]; lastRun: DreamRecord["lastRun"]; state?: string };
}

/** The memory's files, history and Dream's schedule: `troupe memory show` and GET /api/memory. */
export async function memoryOverview(workspace: string, store: Store): Promise<MemoryOverview> {
  const files = createMemoryFiles(workspace);
  const entries = await files.readHistory();
  const dreamCursor = await files.dreamCursor();
  const sizes = [];
  for (const [path, full] of [["SOUL.md", files.paths.soul], ["USER.md", files.paths.user], ["memory/MEMORY.md", files.paths.memory]] as const) {
    sizes.push({ path, bytes: (await stat(full).catch(() => undefined))?.size ?? null });
  }
  const record = await readDreamRecord(store);
  return {
    workspace,
    files: sizes,
    history: { entries: entries.length, firstCursor: entries[0]?.cursor ?? null, lastCursor: await files.latestCursor() },
    dreamCursor,
    undigested: entries.filter((e) => e.cursor > dreamCursor).length,
    dream: { nextAt: record?.nextAt ?? null, run: record?.run ?? null, lastRun: record?.lastRun ?? null },
  };
}

const when = (ms: number) => new Date(ms).toISOString().replace("T", " ").slice(0, 16);

export function memoryOverviewLines(o: MemoryOverview): string[] {
  return [
    `workspace ${o.workspace}`,
    ...o.files.map((f) => `  ${f.path.padEnd(17)} ${f.bytes === null ? "missing" : `${f.bytes} bytes`}`),
    `history   memory/history.jsonl: ${o.history.entries} entr${o.history.entries === 1 ? "y" : "ies"}${o.history.firstCursor !== null ? ` (cursors ${o.history.firstCursor}–${o.history.lastCursor})` : ""}`,
    `cursors   .cursor ${o.history.lastCursor}, .dream_cursor ${o.dreamCursor} (${o.undigested} entr${o.undigested === 1 ? "y" : "ies"} not yet digested)`,
    `dream     ${o.dream.state ? `${o.dream.state}; ` : ""}${o.dream.run ? `run in progress (${o.dream.run.phase}); ` : ""}next run ${o.dream.nextAt ? `${when(o.dream.nextAt)} UTC` : "not scheduled yet (the daemon schedules it)"}`,
    ...(o.dream.lastRun ? [`          last run ${when(o.dream.lastRun.at)} UTC: ${o.dream.lastRun.result}`] : []),
  ];
}
