import { spawn } from "node:child_process";
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { writeFileAtomic } from "../config/load.js";
import type { Config } from "../config/schema.js";
import type { DataPaths } from "../paths.js";
import { restartOriginSchema, type RestartOrigin } from "../restart-origin.js";
import { writePidfile } from "./pidfile.js";

/**
 * /restart: the gateway shuts down cleanly, leaves a record of who asked, and starts again with the
 * same command line. The record survives the process change; the next gateway reads and deletes it,
 * and tells that chat the restart completed.
 */

const recordFile = (paths: DataPaths) => join(paths.dataDir, "restart.json");

export const writeRestartRecord = (paths: DataPaths, from: RestartOrigin) => writeFileAtomic(recordFile(paths), JSON.stringify(from), 0o600);

/** The restart that started this gateway, if one did (read once: the file is removed). */
export async function readRestartRecord(paths: DataPaths): Promise<RestartOrigin | undefined> {
  const text = await readFile(recordFile(paths), "utf8").catch(() => undefined);
  if (text === undefined) return undefined;
  await rm(recordFile(paths), { force: true });
  try {
    const parsed = restartOriginSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Starts the next gateway. Under troupe's systemd unit (TROUPE_SUPERVISED=systemd, Restart=always),
 * or with gateway.restartMode "exit", the process only exits and its service manager starts it again; otherwise the same command line is started
 * detached, with the same output, and daemon.pid names it at once (with its start time, so
 * `troupe daemon status` and `stop` find it before it listens; it rewrites the record when it does).
 */
export async function reexec(paths: DataPaths, url: string, mode: Config["gateway"]["restartMode"] = "auto"): Promise<{ how: "spawned"; pid: number } | { how: "service" }> {
  // Node cannot exec(2) itself: "exec" and "spawn" both start a new process with the same command line.
  if (mode === "exit" || process.env.TROUPE_SUPERVISED === "systemd") return { how: "service" };
  const child = spawn(process.execPath, [...process.execArgv, ...process.argv.slice(1)], { detached: true, stdio: "inherit", env: process.env });
  const pid = await new Promise<number>((resolve, reject) => {
    child.once("spawn", () => resolve(child.pid!));
    child.once("error", reject);
  });
  child.unref();
  await writePidfile(paths, { pid, url, startedAt: Date.now() });
  return { how: "spawned", pid };
}
