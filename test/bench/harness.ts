import { spawn } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config/index.js";
import { createDaemon, type Daemon, type DaemonOptions } from "../../src/runtime.js";
import { writeHome } from "../helpers/daemon.js";

/** The fake model in its own process, so its bookkeeping does not count against troupe. */
export async function fakeModel(latencyMs: number, callsPerTurn = 2): Promise<{ url: string; stop: () => void; pid?: number }> {
  const child = spawn(process.execPath, ["--import", "tsx", join(import.meta.dirname, "fake-model.ts"), String(latencyMs), String(callsPerTurn)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const url = await new Promise<string>((resolve) => child.stdout.once("data", (d: Buffer) => resolve(d.toString().trim())));
  return { url, stop: () => child.kill("SIGTERM"), pid: child.pid };
}

export async function daemonFor(url: string, defaults: Record<string, unknown>, opts: DaemonOptions = {}): Promise<{ daemon: Daemon; dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), "troupe-bench-"));
  await writeHome(dir, url, { defaults });
  return { daemon: await createDaemon(await loadConfig({ TROUPE_HOME: dir }), { stream: false, ...opts }), dir };
}

/** Sends one message per chat and resolves, with the elapsed ms, when every reply is out. */
export async function burst(daemon: Daemon, chats: string[]): Promise<number> {
  const pending = new Set<string>();
  let resolveAll!: () => void;
  const allDone = new Promise<void>((resolve) => (resolveAll = resolve));
  const sub = daemon.bus.ofType("outbound").subscribe((e) => {
    for (const id of e.answers) pending.delete(id);
    if (pending.size === 0) resolveAll();
  });
  const t0 = performance.now();
  for (const chat of chats) pending.add(await daemon.accept("api", { chatId: chat, senderId: "bench", content: "list the workspace" }));
  await allDone;
  sub.unsubscribe();
  return performance.now() - t0;
}
