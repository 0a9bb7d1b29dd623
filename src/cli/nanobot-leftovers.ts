import { readdir, readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { importRecordSchema, importReportFile, nanobotSources, parseNanobotCronStore, type ImportRecord } from "../nanobot/record.js";

/**
 * What a nanobot user leaves behind: conversations (nanobot/session/manager.py: <workspace>/sessions/*.jsonl,
 * and ~/.nanobot/sessions before v0.2.4) and cron jobs (nanobot/cron/service.py: ~/.nanobot/cron/jobs.json,
 * moved to <workspace>/cron/jobs.json from v0.3.0 on). Only read, never changed. troupe imports them when
 * the gateway or an agent first starts on the data dir (src/nanobot/import.ts); until then status says so.
 */
export interface NanobotLeftovers {
  sessions: Array<{ dir: string; count: number }>;
  cron: Array<{ file: string; count: number | string }>;
}

async function countSessions(dir: string): Promise<number> {
  const names = await readdir(dir).catch(() => [] as string[]);
  return names.filter((n) => n.endsWith(".jsonl")).length;
}

/** The jobs in a nanobot cron store; a file that does not read is said so (a string), a missing one is 0. */
async function countJobs(file: string): Promise<number | string> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch {
    return 0;
  }
  // Read as the import reads it, so status and doctor never judge a file otherwise.
  const jobs = parseNanobotCronStore(text);
  return typeof jobs === "string" ? jobs : jobs.length;
}

export async function findNanobotLeftovers(workspace: string, home = homedir()): Promise<NanobotLeftovers> {
  const { sessionDirs, cronFiles } = nanobotSources(workspace, home);
  const sessions = await Promise.all(sessionDirs.map(async (dir) => ({ dir, count: await countSessions(dir) })));
  const cron = await Promise.all(cronFiles.map(async (file) => ({ file, count: await countJobs(file) })));
  return { sessions: sessions.filter((s) => s.count > 0), cron: cron.filter((c) => c.count !== 0) };
}

/** The import done on this data dir, as its first start recorded it (undefined: not done). */
export async function nanobotImport(dataDir: string): Promise<ImportRecord | undefined> {
  const text = await readFile(importReportFile(dataDir), "utf8").catch(() => undefined);
  if (text === undefined) return undefined;
  try {
    return importRecordSchema.parse(JSON.parse(text));
  } catch {
    return undefined;
  }
}

const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? "" : "s"}`;

/** "imported N sessions and M cron jobs from nanobot on <date>" (and how many were left out, and where that is said). */
export function importedLine(record: ImportRecord): string {
  const left = record.skipped.length ? `; ${plural(record.skipped.length, "item")} left out (the log says which and why)` : "";
  return `imported ${plural(record.sessions, "session")} and ${plural(record.cron, "cron job")} from nanobot on ${new Date(record.at).toISOString().slice(0, 10)}${left}`;
}

/** The status line: the import done, or what waits for it, or undefined when there is nothing of nanobot's. */
export async function nanobotLine(workspace: string, dataDir: string): Promise<{ line: string; imported: boolean } | undefined> {
  const record = await nanobotImport(dataDir);
  if (record) return { line: importedLine(record), imported: true };
  const line = leftoversLine(await findNanobotLeftovers(workspace));
  return line ? { line, imported: false } : undefined;
}

/** "found N nanobot sessions in … and M cron jobs in …: not imported", or undefined when there is nothing. */
export function leftoversLine(found: NanobotLeftovers): string | undefined {
  const parts = [
    ...found.sessions.map((s) => `${s.count} nanobot session${s.count === 1 ? "" : "s"} in ${s.dir}`),
    ...found.cron.map((c) => (typeof c.count === "number" ? `${c.count} cron job${c.count === 1 ? "" : "s"} in ${c.file}` : `a nanobot cron store ${c.file} that does not read (${c.count})`)),
  ];
  if (!parts.length) return undefined;
  return `found ${parts.length > 1 ? `${parts.slice(0, -1).join(", ")} and ${parts.at(-1)}` : parts[0]}: not imported yet`;
}

/** What to do about them (doctor's fix). */
export const LEFTOVERS_FIX =
  "troupe imports them (once, never over its own sessions and jobs) when the gateway or troupe agent first starts on this data dir; nanobot's files are left as they are (README: Coming from nanobot)";
