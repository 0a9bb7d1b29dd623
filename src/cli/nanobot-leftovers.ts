import { readdir, readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join, resolve } from "node:path";

/**
 * What a nanobot user leaves behind that troupe does not import: conversations (nanobot/session/manager.py:
 * <workspace>/sessions/*.jsonl, and ~/.nanobot/sessions before v0.2.4) and cron jobs (nanobot/cron/service.py:
 * ~/.nanobot/cron/jobs.json, moved to <workspace>/cron/jobs.json from v0.3.0 on). Only read, never changed.
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
  try {
    const jobs = (JSON.parse(text) as { jobs?: unknown }).jobs;
    return Array.isArray(jobs) ? jobs.length : "no jobs list in it";
  } catch {
    return "not valid JSON";
  }
}

export async function findNanobotLeftovers(workspace: string, home = homedir()): Promise<NanobotLeftovers> {
  const nanobotDir = join(home, ".nanobot");
  const unique = (paths: string[]) => [...new Set(paths.map((p) => resolve(p)))];
  const sessions = await Promise.all(unique([join(workspace, "sessions"), join(nanobotDir, "sessions")]).map(async (dir) => ({ dir, count: await countSessions(dir) })));
  const cron = await Promise.all(unique([join(workspace, "cron", "jobs.json"), join(nanobotDir, "cron", "jobs.json")]).map(async (file) => ({ file, count: await countJobs(file) })));
  return { sessions: sessions.filter((s) => s.count > 0), cron: cron.filter((c) => c.count !== 0) };
}

/** "found N nanobot sessions in … and M cron jobs in …: not imported", or undefined when there is nothing. */
export function leftoversLine(found: NanobotLeftovers): string | undefined {
  const parts = [
    ...found.sessions.map((s) => `${s.count} nanobot session${s.count === 1 ? "" : "s"} in ${s.dir}`),
    ...found.cron.map((c) => (typeof c.count === "number" ? `${c.count} cron job${c.count === 1 ? "" : "s"} in ${c.file}` : `a nanobot cron store ${c.file} that does not read (${c.count})`)),
  ];
  if (!parts.length) return undefined;
  return `found ${parts.length > 1 ? `${parts.slice(0, -1).join(", ")} and ${parts.at(-1)}` : parts[0]}: not imported`;
}

/** What to do about them (doctor's fix). */
export const LEFTOVERS_FIX =
  "troupe starts its conversations afresh and does not read nanobot's cron store; re-create a job with troupe cron add (README: Coming from nanobot); the files are left as they are";
