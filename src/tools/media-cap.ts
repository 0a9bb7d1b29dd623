import { lstat, readdir, rm } from "node:fs/promises";
import { join } from "node:path";

/** How much of <data dir>/media/web web_fetch keeps: twenty images at the largest it takes. */
export const WEB_MEDIA_CAP_BYTES = 100 * 1024 * 1024;

/** A temp file younger than this is a save in progress; an older one was left by a crash. */
const PART_IN_PROGRESS_MS = 3600_000;

/** One pass at a time per folder: two passes at once would each count files the other removes. */
const passes = new Map<string, Promise<void>>();

/**
 * Keeps the files in `dir` under `capBytes` together, removing the oldest (by modification time, as
 * a file saved again is written again) first. `keep` (the file just saved) and saves in progress are
 * never removed, so the folder may stay over the cap by those. Answers the names removed.
 */
export function keepUnderCap(dir: string, capBytes: number, keep: string, now = Date.now()): Promise<string[]> {
  const removed: string[] = [];
  const pass = (passes.get(dir) ?? Promise.resolve()).then(async () => {
    const files: { name: string; size: number; mtime: number }[] = [];
    for (const name of await readdir(dir)) {
      const info = await lstat(join(dir, name)).catch(() => undefined);
      if (info?.isFile()) files.push({ name, size: info.size, mtime: info.mtimeMs });
    }
    let total = files.reduce((sum, f) => sum + f.size, 0);
    const oldestFirst = files.sort((x, y) => x.mtime - y.mtime || x.name.localeCompare(y.name));
    for (const f of oldestFirst) {
      if (total <= capBytes) break;
      if (f.name === keep || (f.name.endsWith(".part") && now - f.mtime < PART_IN_PROGRESS_MS)) continue;
      await rm(join(dir, f.name), { force: true });
      removed.push(f.name);
      total -= f.size;
    }
  });
  const settled = pass.catch(() => undefined);
  passes.set(dir, settled);
  void settled.then(() => passes.get(dir) === settled && passes.delete(dir));
  return pass.then(() => removed);
}
