import { spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { TroupeError } from "../errors.js";
import type { DataPaths } from "../paths.js";
import type { ActorNode } from "../server/actor-tree.js";
import { connectDaemon } from "./client.js";
import { isAlive, readPidfile } from "./pidfile.js";

export const TROUPE_BIN = fileURLToPath(new URL("../../bin/troupe.js", import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Where a detached gateway's own stdout and stderr go (startup errors before logging is up). */
export const daemonOutFile = (paths: DataPaths) => join(paths.logsDir, "daemon.out");

async function tail(file: string, lines: number): Promise<string> {
  const text = await readFile(file, "utf8").catch(() => "");
  return text.trimEnd().split("\n").slice(-lines).join("\n");
}

/** `troupe daemon start`: a detached gateway; returns once /health answers. */
export async function startDaemon(paths: DataPaths, timeoutMs = 30_000): Promise<number> {
  const running = await connectDaemon(paths);
  if (running) {
    console.log(`troupe daemon is already running (pid ${running.pid}) on ${running.url}`);
    return 0;
  }
  await mkdir(paths.logsDir, { recursive: true });
  const out = openSync(daemonOutFile(paths), "a");
  const child = spawn(process.execPath, [TROUPE_BIN, "gateway", "--detached"], { detached: true, stdio: ["ignore", out, out], env: process.env });
  closeSync(out);
  let exited: number | null | undefined;
  child.once("exit", (code) => (exited = code));
  child.unref();
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    await sleep(100);
    if (exited !== undefined) {
      const why = (await tail(daemonOutFile(paths), 5)) || `exit code ${exited}`;
      throw new TroupeError(`troupe daemon did not start:\n${why}`);
    }
    const client = await connectDaemon(paths, 500);
    if (client && client.pid === child.pid) {
      console.log(`troupe daemon started (pid ${client.pid}) on ${client.url}; logs: troupe daemon logs -f`);
      return 0;
    }
  }
  throw new TroupeError(`troupe daemon (pid ${child.pid}) did not answer /health within ${timeoutMs / 1000}s; see ${daemonOutFile(paths)}`);
}

/** `troupe daemon stop`: SIGTERM, then waits for a graceful exit. */
export async function stopDaemon(paths: DataPaths, timeoutMs = 20_000): Promise<number> {
  const info = await readPidfile(paths);
  if (!info) {
    console.log("troupe daemon is not running");
    return 0;
  }
  process.kill(info.pid, "SIGTERM");
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!isAlive(info.pid)) {
      console.log(`troupe daemon stopped (pid ${info.pid})`);
      return 0;
    }
    await sleep(100);
  }
  throw new TroupeError(`troupe daemon (pid ${info.pid}) did not stop within ${timeoutMs / 1000}s; kill it with: kill -9 ${info.pid}`);
}

const ago = (ms: number) => (ms < 60_000 ? `${Math.round(ms / 1000)}s` : ms < 3_600_000 ? `${Math.round(ms / 60_000)}m` : `${(ms / 3_600_000).toFixed(1)}h`);

export function treeLines(node: ActorNode, now = Date.now(), depth = 0): string[] {
  const head = `${"  ".repeat(depth)}${node.id} [${node.machine ?? node.kind}] ${node.state} (${ago(now - node.since)})`;
  return [head, ...node.children.flatMap((c) => treeLines(c, now, depth + 1))];
}

interface ActorsResponse {
  root?: ActorNode;
  failed: Array<{ id: string; status: string; error: string | null }>;
  turns: { running: number; waiting: number; max: number };
}

/** `troupe daemon status`: exit 0 when running, 3 when not (as systemctl does). */
export async function daemonStatus(paths: DataPaths): Promise<number> {
  const client = await connectDaemon(paths);
  if (!client) {
    console.log("troupe daemon is not running");
    return 3;
  }
  const health = await client.get<{ version: string; uptimeMs: number }>("/health");
  const actors = await client.get<ActorsResponse>("/api/actors");
  console.log(`troupe daemon running (pid ${client.pid}) on ${client.url}, version ${health.version}, up ${ago(health.uptimeMs)}`);
  console.log(`turns: ${actors.turns.running} running, ${actors.turns.waiting} waiting (max ${actors.turns.max})`);
  if (actors.root) for (const line of treeLines(actors.root)) console.log(line);
  for (const f of actors.failed) console.log(`${f.status.toUpperCase()}: ${f.id}${f.error ? ` (${f.error})` : ""}`);
  return 0;
}
