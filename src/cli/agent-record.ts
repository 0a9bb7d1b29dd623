import { join } from "node:path";
import type { DataPaths } from "../paths.js";
import { readToken } from "../server/token.js";
import { controlClient, type DaemonClient } from "./client.js";
import { checkGateway, removeFile, removePidfile, writePidfile } from "./pidfile.js";

/**
 * Where an in-process `troupe agent` records the control API it serves while it holds the store
 * (same shape as daemon.pid), so the other commands go through it instead of finding the store locked.
 */
export const agentFile = (paths: DataPaths) => join(paths.dataDir, "agent.json");
const asPidfile = (paths: DataPaths): DataPaths => ({ ...paths, pidFile: agentFile(paths) });

export const writeAgentRecord = (paths: DataPaths, url: string) => writePidfile(asPidfile(paths), { pid: process.pid, url, startedAt: Date.now() });
export const removeAgentRecord = (paths: DataPaths) => removePidfile(asPidfile(paths));
/**
 * Removes the record while this process still holds the store: only the holder writes one, so it is
 * this process's (or a dead one's), and it is not read back first as removeAgentRecord does.
 */
export const removeOwnAgentRecord = (paths: DataPaths) => removeFile(agentFile(paths));

/** A client for the in-process `troupe agent` that holds this data dir's store, or undefined when none runs (a stale record is removed). */
export async function connectAgent(paths: DataPaths, timeoutMs = 2_000): Promise<DaemonClient | undefined> {
  const check = await checkGateway(asPidfile(paths), timeoutMs);
  if (check.kind === "stale") await removeFile(agentFile(paths));
  if (check.kind !== "ours" || !check.health) return undefined;
  const token = await readToken(paths.tokenFile);
  return token ? { ...controlClient(check.info.url, check.info.pid, token), holder: "agent" } : undefined;
}

/** How long a starting gateway waits for an in-process `troupe agent` to finish what runs and let go of the store. */
const HANDOVER_LIMIT_MS = 10 * 60_000;

/**
 * A starting gateway takes the store over from an in-process `troupe agent`: that agent finishes
 * what runs, closes the store and answers; its chat goes on through the daemon.
 */
export async function takeOverFromAgent(paths: DataPaths, say: (text: string) => void): Promise<void> {
  const agent = await connectAgent(paths);
  if (!agent) return;
  say(`troupe agent (pid ${agent.pid}) holds the store; it hands it over once what runs there has finished`);
  const token = await readToken(paths.tokenFile);
  const res = await fetch(`${agent.url}/api/handoff`, { method: "POST", headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(HANDOVER_LIMIT_MS) }).catch(
    (err: unknown) => ({ ok: false, status: 0, statusText: (err as Error).message }) as const,
  );
  if (!res.ok) say(`troupe agent (pid ${agent.pid}) did not hand the store over (${res.status || res.statusText})`);
}
