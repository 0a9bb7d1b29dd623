import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeHome } from "../helpers/home.js";
import { startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { fakeModel } from "./harness.js";

/**
 * A process's CPU time so far in ms, every thread of it (Linux: /proc/<pid>/task/<tid>/schedstat,
 * whose first field is the time on a CPU in ns, to the µs; 0 elsewhere or once it is gone). /proc's
 * stat counts in 10 ms ticks: a mean of 10 turns read from it was 0, 1 or 3 ms, too coarse to subtract.
 */
export function cpuMsOf(pid: number | undefined): number {
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
    return ns / 1e6;
  } catch {
    return 0;
  }
}

/** A process's resident set size in bytes, from /proc/<pid>/status (Linux). */
export async function rssOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]);
  return kb * 1024;
}

/**
 * A process's RSS in its two parts (/proc/<pid>/status, Linux): anonymous memory (V8's heap, malloc:
 * what the process holds) and file pages mapped (the node binary, and the store's table files,
 * which LevelDB reads through mmap: they grow with the store and the kernel can drop them).
 */
export async function rssPartsOf(pid: number): Promise<{ anon: number; file: number }> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1]) * 1024;
  return { anon: kb("RssAnon"), file: kb("RssFile") };
}

/**
 * A real `troupe gateway` (the bundled CLI, built first, as users run it) on a fresh data dir,
 * against the bench's fake model; `stop` ends both and removes the data dir. Exits the script on a
 * platform without /proc (what these benches read).
 */
export async function benchGateway(name: string, modelLatencyMs: number, defaults: Record<string, unknown>, env: Record<string, string> = {}): Promise<{ gateway: GatewayProcess; pid: number; stop: () => Promise<void> }> {
  if (process.platform !== "linux") {
    console.log(`(the ${name} bench reads RSS from /proc: skipped on this platform)`);
    process.exit(0);
  }
  spawnSync(process.execPath, [fileURLToPath(new URL("../../scripts/build.mjs", import.meta.url))], { stdio: "inherit" });
  const model = await fakeModel(modelLatencyMs);
  const scratch = await mkdtemp(join(tmpdir(), `troupe-bench-${name}-`));
  const home = join(scratch, "home");
  await mkdir(home);
  // Any free port: another gateway (a bench running beside, a user's daemon) may hold the default one.
  await writeHome(home, model.url, { defaults, config: { gateway: { port: 0 } } });
  const gateway = await startGateway(home, env);
  const stop = async () => {
    gateway.proc.kill("SIGTERM");
    await gateway.exited;
    model.stop();
    await rm(scratch, { recursive: true, force: true });
  };
  return { gateway, pid: gateway.proc.pid!, stop };
}
