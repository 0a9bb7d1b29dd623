import { readFileSync, realpathSync } from "node:fs";
import { readFile, unlink, writeFile } from "node:fs/promises";
import { z } from "zod";
import type { DataPaths } from "../paths.js";
import { lazySchema } from "../lazy-schema.js";
import { httpFetch } from "./http.js";
import type { StoreHealthSnapshot } from "../store/health.js";

/** What a running gateway writes to <data dir>/daemon.pid. */
export const pidfileSchema = lazySchema(() =>
  z.object({
    pid: z.number().int().positive(),
    url: z.string(),
    startedAt: z.number(),
    /** The data dir it serves (pidfiles written before this field have none). */
    dataDir: z.string().optional(),
    /** The process's start time as the kernel counts it (/proc/<pid>/stat): a pid reused by another process has another. */
    procStart: z.string().optional(),
  }),
);
export type Pidfile = z.infer<typeof pidfileSchema>;

/** Fields of /proc/<pid>/stat after the command name, which may itself hold spaces and parentheses. */
function procStat(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/** When a process started, in clock ticks since boot (field 22 of /proc/<pid>/stat); undefined without /proc. */
export const processStartTime = (pid: number): string | undefined => procStat(pid)?.[19];

/** Whether a process runs. A zombie (exited, not reaped yet, as under an init that never reaps) counts as gone. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const stat = procStat(pid);
  return stat ? stat[0] !== "Z" : true; // no /proc: trust kill(0)
}

/** What daemon.pid says, whether or not its process still runs. */
export async function readPidfile(paths: DataPaths): Promise<Pidfile | undefined> {
  try {
    // Read first: the schema is built at its first use, which a missing file (the usual case) never is.
    const text = await readFile(paths.pidFile, "utf8");
    const parsed = pidfileSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export const writePidfile = (paths: DataPaths, info: Omit<Pidfile, "dataDir" | "procStart">) =>
  writeFile(paths.pidFile, JSON.stringify({ ...info, dataDir: paths.dataDir, procStart: processStartTime(info.pid) } satisfies Pidfile));

/** Removes the pidfile if it is still ours (a newer gateway may have replaced it). */
export async function removePidfile(paths: DataPaths, pid = process.pid): Promise<void> {
  try {
    const text = await readFile(paths.pidFile, "utf8");
    const current = pidfileSchema.safeParse(JSON.parse(text));
    if (current.success && current.data.pid !== pid) return;
  } catch {
    // Unreadable: remove it.
  }
  await removeFile(paths.pidFile);
}

/**
 * Removes a file that may be gone already, as rm(file, { force: true }) would, with one unlink: fs.rm
 * loads Node's rimraf, which a one-shot command compiles from source (bin/troupe.js changes V8's
 * flags, and V8 then refuses Node's own code cache).
 */
export async function removeFile(file: string): Promise<void> {
  try {
    await unlink(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
}

const samePath = (a: string, b: string) => {
  if (a === b) return true;
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return false;
  }
};

/** What /health says about the process that answers it. */
export interface Health {
  ok: boolean;
  version: string;
  pid: number;
  dataDir?: string;
  uptimeMs: number;
  /** Absent from a gateway older than this CLI. */
  store?: StoreHealthSnapshot & { error?: string };
  disk?: { free: number; size: number; floor: number; low: string | null } | null;
}

/**
 * Whom daemon.pid names. `ours`: this data dir's gateway, shown by its /health (same pid, same data
 * dir) or, when it does not answer (busy starting or stopping, or hung), by its start time matching
 * the one recorded. `stale`: the process is gone, or the pid now belongs to someone else (another
 * data dir's gateway, or any process that got the pid) — never to be signalled. `unknown`: it does
 * not answer and there is no /proc to tell.
 */
export type GatewayCheck =
  | { kind: "none" }
  | { kind: "ours"; info: Pidfile; health?: Health }
  | { kind: "stale"; info: Pidfile; why: string }
  | { kind: "unknown"; info: Pidfile };

export async function checkGateway(paths: DataPaths, timeoutMs = 2_000): Promise<GatewayCheck> {
  const info = await readPidfile(paths);
  if (!info) return { kind: "none" };
  if (!isAlive(info.pid)) return { kind: "stale", info, why: `pid ${info.pid} no longer runs` };
  const stranger = { kind: "stale" as const, info, why: `pid ${info.pid} is not troupe's gateway for ${paths.dataDir}` };
  const health = await httpFetch(`${info.url}/health`, { signal: AbortSignal.timeout(timeoutMs) })
    // 503: the gateway runs but its store is failing (its body says why).
    .then(async (res) => (res.ok || res.status === 503 ? ((await res.json()) as Health) : res.discard()))
    .catch(() => undefined);
  if (health?.pid === info.pid) {
    return health.dataDir === undefined || samePath(health.dataDir, paths.dataDir) ? { kind: "ours", info, health } : stranger;
  }
  const started = processStartTime(info.pid);
  if (started === undefined) return { kind: "unknown", info };
  return info.procStart !== undefined && started === info.procStart ? { kind: "ours", info } : stranger;
}

/** Removes the pidfile `check` found stale, saying so (to stdout: it is information, not a failure). */
export async function clearStale(paths: DataPaths, check: GatewayCheck): Promise<void> {
  if (check.kind !== "stale") return;
  await removePidfile(paths, check.info.pid);
  console.log(`removed a stale ${paths.pidFile} (${check.why})`);
}
