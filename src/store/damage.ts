import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { TroupeError } from "../errors.js";
import { classifyStoreError, failureLine } from "./health.js";

export const REPAIR_COMMAND = "troupe doctor --repair";

/** A store LevelDB cannot open as it is: says what is damaged and the command that repairs it. */
export class StoreDamagedError extends TroupeError {
  override readonly exitCode = 4;
  constructor(
    readonly path: string,
    readonly damage: string,
    options?: { cause?: unknown },
  ) {
    super(`the store at ${path} is damaged (${damage}); repair it with \`${REPAIR_COMMAND}\` (it copies the store aside first)`, options);
  }
}

/** LevelDB's own files: tables, logs (not its text LOG), the manifest. */
const isDataFile = (name: string) => /^\d+\.(ldb|sst|log)$/.test(name) || name.startsWith("MANIFEST-");

/**
 * Why a store does not open (or would open as an empty one): a missing CURRENT or manifest file,
 * corruption, or a disk failure. Undefined when nothing is known to be wrong. Called before opening
 * (err undefined) and after a failed open.
 */
export async function diagnoseOpenFailure(path: string, err: unknown): Promise<TroupeError | undefined> {
  if (!existsSync(path)) return undefined;
  const files = await readdir(path).catch(() => [] as string[]);
  if (files.some(isDataFile)) {
    if (!files.includes("CURRENT")) return new StoreDamagedError(path, "its CURRENT file is missing", { cause: err });
    const manifest = (await readFile(join(path, "CURRENT"), "utf8").catch(() => "")).trim();
    if (!manifest || !files.includes(manifest)) return new StoreDamagedError(path, `its manifest file ${manifest || "(CURRENT is empty)"} is missing`, { cause: err });
  }
  if (err === undefined) return undefined;
  const failure = classifyStoreError(err);
  const cause = (err as { cause?: { message?: string } }).cause?.message ?? (err as Error).message ?? String(err);
  if (/corrupt/i.test(cause) || (err as { code?: string }).code === "LEVEL_CORRUPTION") return new StoreDamagedError(path, `corruption: ${cause}`, { cause: err });
  if (failure === "disk-full" || failure === "read-only") return new TroupeError(`the store does not open: ${failureLine(failure, join(path, ".."))}`.replace("; troupe resumes by itself", ", then start troupe again"), { cause: err });
  return undefined;
}

export interface DroppedAtOpen {
  /** Damaged log records LevelDB skipped. */
  records: number;
  bytes: number;
}

/**
 * What LevelDB dropped as corrupt while opening: it skips damaged records of its write-ahead log
 * (and says so only in its LOG file, rewritten at each open) rather than failing.
 */
export async function droppedAtOpen(path: string): Promise<DroppedAtOpen | null> {
  const text = await readFile(join(path, "LOG"), "utf8").catch(() => "");
  let records = 0;
  let bytes = 0;
  for (const m of text.matchAll(/dropping (\d+) bytes/g)) {
    records++;
    bytes += Number(m[1]);
  }
  return records ? { records, bytes } : null;
}
