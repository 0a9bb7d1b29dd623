import { spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { mkdir, open, stat } from "node:fs/promises";
import { join } from "node:path";
import { TroupeError } from "../errors.js";
import type { DataPaths } from "../paths.js";
import { PACKAGE_ROOT } from "../package-root.js";
import type { ActorNode } from "../server/actor-view.js";
import type { ChannelState } from "../daemon-types.js";
import { connectAgent } from "./agent-record.js";
import { connectDaemon, type DaemonClient } from "./client.js";
import { checkGateway, clearStale, isAlive, type GatewayCheck, type Health } from "./pidfile.js";
import { storeStateLine } from "./storage-lines.js";
import { memoryLine, type ProcessMemory } from "../server/process-memory.js";

export const TROUPE_BIN = join(PACKAGE_ROOT, "bin", "troupe.js");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Where a detached gateway's own stdout and stderr go (startup errors before logging is up). */
export const daemonOutFile = (paths: DataPaths) => join(paths.logsDir, "daemon.out");

/** What a file holds from byte `from` on: this start's output, not an earlier one's. */
async function readFrom(file: string, from: number): Promise<string> {
  const handle = await open(file, "r").catch(() => undefined);
  if (!handle) return "";
  try {
    const { size } = await handle.stat();
    const buffer = Buffer.alloc(Math.max(0, size - from));
    await handle.read(buffer, 0, buffer.length, from);
    return buffer.toString("utf8");
  } finally {
    await handle.close();
  }
}

/** Which gateway daemon.pid names; a stale pidfile (its process gone, or the pid someone else's) is removed with a note. */
async function findGateway(paths: DataPaths): Promise<GatewayCheck> {
  const check = await checkGateway(paths);
  await clearStale(paths, check);
  return check.kind === "stale" ? { kind: "none" } : check;
}

/** `troupe daemon start`: a detached gateway; returns once /health answers and its channels have started (or failed). */
export async function startDaemon(paths: DataPaths, timeoutMs = 30_000): Promise<number> {
  const check = await findGateway(paths);
  const running = await connectDaemon(paths, 2_000, check);
  if (running) {
    console.log(`troupe daemon is already running (pid ${running.pid}) on ${running.url}`);
    return 0;
  }
  if (check.kind !== "none") throw new TroupeError(`troupe daemon (pid ${check.info.pid}) runs but does not answer on ${check.info.url}; see troupe daemon logs, or stop it with: troupe daemon stop`);
  await mkdir(paths.logsDir, { recursive: true });
  const outFile = daemonOutFile(paths);
  const from = (await stat(outFile).catch(() => undefined))?.size ?? 0;
  const out = openSync(outFile, "a");
  const child = spawn(process.execPath, [TROUPE_BIN, "gateway", "--detached"], { detached: true, stdio: ["ignore", out, out], env: process.env });
  closeSync(out);
  let exited: number | null | undefined;
  child.once("exit", (code) => (exited = code));
  child.unref();
  const deadline = Date.now() + timeoutMs;
  let client: DaemonClient | undefined;
  let channels: ChannelState[] = [];
  while (Date.now() < deadline) {
    await sleep(100);
    if (exited !== undefined) {
      const why = (await readFrom(outFile, from)).trim() || `exit code ${exited}`;
      throw new TroupeError(`troupe daemon did not start:\n${why}`);
    }
    client ??= await connectDaemon(paths, 500).then((c) => (c?.pid === child.pid ? c : undefined));
    if (!client) continue;
    // A channel that cannot start (a rejected token) is said now, not found later in the logs.
    // A gateway that dies here is reported by the exit check above on the next round.
    const actors = await client.get<ActorsResponse>("/api/actors").catch(() => undefined);
    if (!actors) continue;
    channels = actors.channels ?? [];
    if (!channels.some((c) => c.state === "starting")) break;
  }
  if (client) {
    console.log(`troupe daemon started (pid ${client.pid}) on ${client.url}; logs: troupe daemon logs -f`);
    const broken = channels.filter((c) => c.state !== "started");
    const what: Record<string, string> = {
      starting: "is still connecting",
      backing_off: "cannot reach its platform; retrying with backoff",
      restarting: "is restarting after a failure",
      failed: "failed at start",
    };
    for (const c of broken) console.error(`${c.name} ${what[c.state] ?? `is ${c.state}`}${c.error ? `: ${c.error}` : ""}`);
    return channels.some((c) => c.state === "failed") ? 1 : 0;
  }
  throw new TroupeError(`troupe daemon (pid ${child.pid}) did not answer /health within ${timeoutMs / 1000}s; see ${outFile}`);
}

/** `troupe daemon stop`: SIGTERM to this data dir's gateway (never to a process that reused its pid), then waits for a graceful exit. */
export async function stopDaemon(paths: DataPaths, timeoutMs = 20_000): Promise<number> {
  const check = await findGateway(paths);
  if (check.kind === "none") {
    console.log("troupe daemon is not running");
    return 0;
  }
  const { pid } = check.info;
  if (check.kind === "unknown") {
    throw new TroupeError(`pid ${pid} in ${paths.pidFile} does not answer on ${check.info.url}, and without /proc troupe cannot tell whether it is its gateway; if it is, stop it with: kill ${pid}`);
  }
  process.kill(pid, "SIGTERM");
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) {
      console.log(`troupe daemon stopped (pid ${pid})`);
      return 0;
    }
    await sleep(100);
  }
  throw new TroupeError(`troupe daemon (pid ${pid}) did not stop within ${timeoutMs / 1000}s; kill it with: kill -9 ${pid}`);
}

const ago = (ms: number) => (ms < 60_000 ? `${Math.round(ms / 1000)}s` : ms < 3_600_000 ? `${Math.round(ms / 60_000)}m` : `${(ms / 3_600_000).toFixed(1)}h`);

export function treeLines(node: ActorNode, now = Date.now(), depth = 0): string[] {
  const head = `${"  ".repeat(depth)}${node.id} [${node.machine ?? node.kind}] ${node.state} (${ago(now - node.since)})`;
  return [head, ...node.children.flatMap((c) => treeLines(c, now, depth + 1))];
}

/** A line for each channel that cannot reach its platform: since when, how many failures, the last error (redacted). */
export function backingOffLines(actors: ActorsResponse, now = Date.now()): string[] {
  return (actors.channels ?? [])
    .filter((c) => c.state === "backing_off")
    .map((c) => `BACKING OFF: channel:${c.name}${c.since ? ` since ${ago(now - c.since)}` : ""}${c.failures ? ` (${c.failures} failure${c.failures === 1 ? "" : "s"})` : ""}${c.error ? `: ${c.error}` : ""}`);
}

export interface ActorsResponse {
  root?: ActorNode;
  failed: Array<{ id: string; status: string; error: string | null }>;
  /** Absent from a gateway older than this CLI. */
  channels?: ChannelState[];
  turns: { running: number; waiting: number; max: number };
}

/** `troupe daemon status`: exit 0 when running, 1 when running with a failed part, 3 when not running (as systemctl does). */
export async function daemonStatus(paths: DataPaths): Promise<number> {
  const check = await findGateway(paths);
  const client = await connectDaemon(paths, 2_000, check);
  if (!client) {
    if (check.kind === "none") {
      const agent = await connectAgent(paths).catch(() => undefined);
      console.log(`troupe daemon is not running${agent ? `; troupe agent (pid ${agent.pid}) runs in-process and lends the store to the other commands (troupe daemon start takes it over)` : ""}`);
    }
    else console.log(`troupe daemon (pid ${check.info.pid}) runs but does not answer on ${check.info.url}`);
    return 3;
  }
  // /health answers 503 while the store fails: that answer is read too (client.get would throw on it).
  const health = check.kind === "ours" && check.health ? check.health : await client.get<Health>("/health");
  const actors = await client.get<ActorsResponse>("/api/actors");
  console.log(`troupe daemon running (pid ${client.pid}) on ${client.url}, version ${health.version}, up ${ago(health.uptimeMs)}`);
  const store = storeStateLine(health);
  if (store) console.log(`store: ${store}`);
  if (health.disk?.low) console.log(`disk: ${health.disk.low}`);
  console.log(`turns: ${actors.turns.running} running, ${actors.turns.waiting} waiting (max ${actors.turns.max})`);
  // A gateway older than this CLI has no /api/status.
  const status = await client.get<{ memory?: ProcessMemory }>("/api/status").catch(() => undefined);
  if (status?.memory) console.log(`memory: ${memoryLine(status.memory)}`);
  if (actors.root) for (const line of treeLines(actors.root)) console.log(line);
  for (const f of actors.failed) console.log(`${f.status.toUpperCase()}: ${f.id}${f.error ? ` (${f.error})` : ""}`);
  for (const line of backingOffLines(actors)) console.log(line);
  return actors.failed.some((f) => f.status === "failed") || health.store?.state === "failing" ? 1 : 0;
}
