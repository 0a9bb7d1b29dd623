import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Script } from "node:vm";
import type { Daemon, DaemonOptions } from "../../src/daemon-types.js";
import { writeHome } from "../helpers/home.js";
import type * as BundleEntry from "./bundle-entry.js";

type Troupe = typeof BundleEntry;
let troupe: Promise<Troupe> | undefined;

/**
 * troupe as users run it: test/bench/bundle-entry.ts compiled as the CLI's bundle is (built first by
 * scripts/build-bench.mjs), not its source under tsx, whose esbuild transform names every function
 * it makes through a `__name` helper (keepNames: ~1.4% of a steady burst's busy CPU samples in
 * __name and the name setter it calls, and more code for V8 to compile) and whose loader hook the
 * bundle does without. Measured once, interleaved on a loaded machine: the 1,000-session point's main
 * thread 0.91 vs 1.01 ms a turn (lower in 9 of 9 pairs), its peak RSS 195 vs 229 MB; the steady
 * burst's CPU per turn 1.59 vs 1.70 ms (7 pairs; noisy). TROUPE_BENCH_FROM_SOURCE=1 runs the source
 * under tsx instead, to compare the two.
 */
export function loadTroupe(): Promise<Troupe> {
  return (troupe ??= process.env.TROUPE_BENCH_FROM_SOURCE ? import("./bundle-entry.js") : Promise.resolve().then(loadBundle));
}

function loadBundle(): Troupe {
  const build = spawnSync(process.execPath, [fileURLToPath(new URL("../../scripts/build-bench.mjs", import.meta.url))], { stdio: "inherit" });
  if (build.status !== 0) throw new Error(`scripts/build-bench.mjs failed (exit ${build.status})`);
  const file = fileURLToPath(new URL("../../dist-bench/troupe-bench.cjs", import.meta.url));
  // Compiled and called as bin/troupe.js runs dist/troupe.cjs (the file is the function Node wraps a
  // CommonJS module in, its import() calls made __imp_), without the code cache: start-up is not measured here.
  const module = { exports: {} as Troupe };
  const run = new Script(readFileSync(file, "latin1"), { filename: file }).runInThisContext() as (...args: unknown[]) => void;
  run(module.exports, createRequire(file), module, file, dirname(file), (specifier: string) => import(specifier));
  return module.exports;
}

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
  return { daemon: await daemonAt(dir, opts), dir };
}

/** A daemon (troupe's bundle) on a data dir whose config is written. */
export async function daemonAt(dir: string, opts: DaemonOptions = {}): Promise<Daemon> {
  const { createDaemon, loadConfig } = await loadTroupe();
  return createDaemon(await loadConfig({ TROUPE_HOME: dir }), { stream: false, ...opts });
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
