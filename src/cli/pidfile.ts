import { readFileSync } from "node:fs";
import { readFile, rm, writeFile } from "node:fs/promises";
import { z } from "zod";
import type { DataPaths } from "../paths.js";

/** What a running gateway writes to <data dir>/daemon.pid. */
export const pidfileSchema = z.object({ pid: z.number().int().positive(), url: z.string(), startedAt: z.number() });
export type Pidfile = z.infer<typeof pidfileSchema>;

/** Whether a process runs. A zombie (exited, not reaped yet, as under an init that never reaps) counts as gone. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return true; // no /proc: trust kill(0)
  }
}

/** The running gateway's pidfile, or undefined when there is none or its process is gone. */
export async function readPidfile(paths: DataPaths): Promise<Pidfile | undefined> {
  try {
    const parsed = pidfileSchema.safeParse(JSON.parse(await readFile(paths.pidFile, "utf8")));
    return parsed.success && isAlive(parsed.data.pid) ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export const writePidfile = (paths: DataPaths, info: Pidfile) => writeFile(paths.pidFile, JSON.stringify(info));

/** Removes the pidfile if it is still ours (a newer gateway may have replaced it). */
export async function removePidfile(paths: DataPaths, pid = process.pid): Promise<void> {
  try {
    const current = pidfileSchema.safeParse(JSON.parse(await readFile(paths.pidFile, "utf8")));
    if (current.success && current.data.pid !== pid) return;
  } catch {
    // Unreadable: remove it.
  }
  await rm(paths.pidFile, { force: true });
}
