import { readFile, rm, writeFile } from "node:fs/promises";
import { z } from "zod";
import type { DataPaths } from "../paths.js";

/** What a running gateway writes to <data dir>/daemon.pid. */
export const pidfileSchema = z.object({ pid: z.number().int().positive(), url: z.string(), startedAt: z.number() });
export type Pidfile = z.infer<typeof pidfileSchema>;

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
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
