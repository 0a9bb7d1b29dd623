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

/**
 * Sends one message per chat and resolves, with the elapsed ms, when every reply is out.
 *
 * `inFlight` is how many senders wait on `daemon.accept` (the synced inbox write) at once. 1 sends
 * one after another: one client feeding the daemon. N independent users do not wait for each
 * other's acknowledgement; `inFlight: 100` is 100 clients sending at once, each sending its next
 * message once the last is acknowledged (as many clients' requests a gateway takes at a time), so
 * the daemon's group commit can take their inbox writes together.
 */
export async function burst(daemon: Daemon, chats: string[], opts: { inFlight?: number } = {}): Promise<number> {
  const pending = new Set<string>();
  const answered = new Set<string>();
  let accepted = 0;
  let resolveAll!: () => void;
  const allDone = new Promise<void>((resolve) => (resolveAll = resolve));
  const check = () => accepted === chats.length && pending.size === 0 && resolveAll();
  const sub = daemon.bus.ofType("outbound").subscribe((e) => {
    for (const id of e.answers) if (!pending.delete(id)) answered.add(id);
    check();
  });
  let next = 0;
  const sender = async () => {
    while (next < chats.length) {
      const id = await daemon.accept("api", { chatId: chats[next++]!, senderId: "bench", content: "list the workspace" });
      accepted++;
      // A reply can go out before its sender hears the acknowledgement.
      if (!answered.delete(id)) pending.add(id);
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: Math.min(chats.length, opts.inFlight ?? 1) }, sender));
  check();
  await allDone;
  sub.unsubscribe();
  return performance.now() - t0;
}
