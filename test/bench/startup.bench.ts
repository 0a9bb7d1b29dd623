/**
 * Start-up (part of `npm run bench`): what a user waits for at the command line, against the floor
 * (`node -e ''`) and against jnano (@jcheesepkg/nanobot 0.9.2, a small TypeScript port of nanobot)
 * answering the same one-shot message from the same fake model. Runs are interleaved; medians.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { TROUPE_BIN } from "../helpers/cli.js";
import { writeHome } from "../helpers/daemon.js";
import { fakeModel } from "./harness.js";
import { record, startSummary } from "./summary.js";

const RUNS = Number(process.env.TROUPE_BENCH_STARTUP_RUNS ?? 7);
const JNANO = "@jcheesepkg/nanobot@0.9.2";
const TIME = existsSync("/usr/bin/time") ? "/usr/bin/time" : undefined;

interface Run {
  ms: number;
  /** Peak RSS in MB (undefined without /usr/bin/time). */
  rssMb?: number;
  /** User + system CPU in ms, every thread (undefined without /usr/bin/time): steadier than wall time on a loaded machine. */
  cpuMs?: number;
  code: number | null;
  out: string;
}

/** Runs a command to its end: wall time, peak RSS (through /usr/bin/time when there is one). */
function timed(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<Run> {
  const [file, argv] = TIME ? [TIME, ["-f", "%U %S %M", cmd, ...args]] : [cmd, args];
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(file, argv, { env: opts.env ?? process.env, cwd: opts.cwd, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      const ms = performance.now() - t0;
      const [user, sys, kb] = TIME ? (err.trim().split("\n").at(-1) ?? "").split(" ").map(Number) : [];
      const cpu = (user ?? NaN) + (sys ?? NaN);
      resolve({ ms, rssMb: Number.isFinite(kb) ? kb! / 1024 : undefined, cpuMs: Number.isFinite(cpu) ? cpu * 1000 : undefined, code, out: out + err });
    });
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[(s.length - 1) >> 1]! + s[s.length >> 1]!) / 2 : NaN;
};

/** jnano in a scratch folder (installed once, kept in the temp dir); undefined if it cannot be installed. */
function installJnano(): string | undefined {
  const dir = join(tmpdir(), "troupe-bench-jnano-0.9.2");
  const cli = join(dir, "node_modules", "@jcheesepkg", "nanobot", "dist", "cli", "index.mjs");
  if (existsSync(cli)) return cli;
  spawnSync("mkdir", ["-p", dir]);
  spawnSync("sh", ["-c", `[ -f package.json ] || echo '{"private":true}' > package.json`], { cwd: dir });
  const r = spawnSync("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", JNANO], { cwd: dir, encoding: "utf8", timeout: 300_000 });
  if (r.status !== 0 || !existsSync(cli)) {
    console.log(`(jnano could not be installed: ${(r.stderr || r.error?.message || "").trim().split("\n")[0]}; its comparison is skipped)`);
    return undefined;
  }
  return cli;
}

// The CLI as users run it: compiled first.
spawnSync(process.execPath, [fileURLToPath(new URL("../../scripts/build.mjs", import.meta.url))], { stdio: "inherit" });
startSummary();
const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("TROUPE_")));
const model = await fakeModel(0, 1);
const jnano = installJnano();
const scratch = await mkdtemp(join(tmpdir(), "troupe-bench-startup-"));

const floor: Run[] = [];
/**
 * NODE_EXTRA_CA_CERTS (set on some machines for a proxy's CA) makes Node 20 read and parse that bundle
 * at every start, before any script runs: tens of ms of CPU that troupe and jnano both pay. Measured
 * here when it is set, so the ratios against jnano can be read (they are taken as users run both).
 */
const extraCa = process.env.NODE_EXTRA_CA_CERTS;
const floorNoCa: Run[] = [];
const version: Run[] = [];
const troupeCold: Run[] = [];
/**
 * The same without bin/troupe.js's V8 code cache, nor the list of Node built-ins it carries (loaded
 * before the V8 flags are set, see bin/troupe.js): what the cache saves, measured in the same run.
 */
const troupeNoCache: Run[] = [];
const jnanoCold: Run[] = [];
for (let i = 0; i < RUNS; i++) {
  floor.push(await timed(process.execPath, ["-e", ""]));
  if (extraCa) floorNoCa.push(await timed(process.execPath, ["-e", ""], { env: Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== "NODE_EXTRA_CA_CERTS")) }));
  version.push(await timed(process.execPath, [TROUPE_BIN, "--version"], { env: { ...clean, TROUPE_HOME: scratch } }));
  const home = join(scratch, `troupe-${i}`);
  await mkdir(home);
  await writeHome(home, model.url);
  const t = await timed(process.execPath, [TROUPE_BIN, "agent", "-m", "hello"], { env: { ...clean, TROUPE_HOME: home } });
  if (t.code !== 0) throw new Error(`troupe agent failed: ${t.out}`);
  troupeCold.push(t);
  const bare = join(scratch, `troupe-nocache-${i}`);
  await mkdir(bare);
  await writeHome(bare, model.url);
  const n = await timed(process.execPath, [TROUPE_BIN, "agent", "-m", "hello"], { env: { ...clean, TROUPE_HOME: bare, TROUPE_NO_CODE_CACHE: "1" } });
  if (n.code !== 0) throw new Error(`troupe agent (no code cache) failed: ${n.out}`);
  troupeNoCache.push(n);
  if (jnano) {
    const ws = join(scratch, `jnano-${i}`);
    await mkdir(ws);
    const env = { ...clean, HOME: ws, LLM_API_BASE: model.url, LLM_MODEL: "fake-model", OPENROUTER_API_KEY: "k", NANOBOT_WORKSPACE: ws };
    const j = await timed(process.execPath, [jnano, "agent", "-m", "hello"], { env, cwd: ws });
    if (j.code !== 0 || !j.out.includes("done")) throw new Error(`jnano failed: ${j.out}`);
    jnanoCold.push(j);
  }
}

// `troupe agent -m` through a running daemon.
const home = join(scratch, "daemon");
await mkdir(home);
// Any free port (the client finds it in the pid file): the default one may be another gateway's.
await writeHome(home, model.url, { config: { gateway: { port: 0 } } });
const gateway = spawn(process.execPath, [TROUPE_BIN, "gateway"], { env: { ...clean, TROUPE_HOME: home }, stdio: ["ignore", "pipe", "pipe"] });
await new Promise<void>((resolve, reject) => {
  let out = "";
  const look = (d: Buffer) => {
    out += d.toString();
    if (/troupe gateway on http/.test(out)) resolve();
  };
  gateway.stdout.on("data", look);
  gateway.stderr.on("data", look);
  gateway.once("exit", () => reject(new Error(`gateway exited: ${out}`)));
});
const viaDaemon: Run[] = [];
for (let i = 0; i < RUNS; i++) {
  const r = await timed(process.execPath, [TROUPE_BIN, "agent", "-m", "hello"], { env: { ...clean, TROUPE_HOME: home } });
  if (r.code !== 0) throw new Error(`troupe agent through the daemon failed: ${r.out}`);
  viaDaemon.push(r);
}
gateway.kill("SIGTERM");
await new Promise((r) => gateway.once("exit", r));
model.stop();
await rm(scratch, { recursive: true, force: true });

const ms = (runs: Run[]) => median(runs.map((r) => r.ms));
const rss = (runs: Run[]) => median(runs.map((r) => r.rssMb ?? NaN));
const cpu = (runs: Run[]) => median(runs.map((r) => r.cpuMs ?? NaN));
const fmt = (n: number, unit: string) => (Number.isFinite(n) ? `${n.toFixed(0)} ${unit}` : "n/a");
console.log(`## start-up, median of ${RUNS} interleaved runs (cold: a fresh data dir each run; fake model on loopback)`);
console.log("command                               wall      peak RSS  CPU (user+sys)");
const row = (name: string, runs: Run[]) =>
  console.log(`${name.padEnd(36)}  ${fmt(ms(runs), "ms").padStart(7)}  ${fmt(rss(runs), "MB").padStart(8)}  ${fmt(cpu(runs), "ms").padStart(8)}`);
row("node -e '' (the floor)", floor);
if (extraCa) row("  without NODE_EXTRA_CA_CERTS", floorNoCa);
row("troupe --version", version);
row("troupe agent -m hello (cold)", troupeCold);
row("  the same without the code cache", troupeNoCache);
if (jnano) row("jnano agent -m hello (cold)", jnanoCold);
row("troupe agent -m hello (daemon)", viaDaemon);

record({ figure: "troupe --version", target: "≤ 80 ms", measured: `${fmt(ms(version), "ms")} (floor ${fmt(ms(floor), "ms")})`, pass: ms(version) <= 80 });
if (jnano) {
  const wall = ms(troupeCold) / ms(jnanoCold);
  const mem = rss(troupeCold) / rss(jnanoCold);
  record({ figure: "cold agent -m, wall vs jnano", target: "≤ 0.5×", measured: `${wall.toFixed(2)}× (${fmt(ms(troupeCold), "ms")} / ${fmt(ms(jnanoCold), "ms")})`, pass: wall <= 0.5 });
  record({
    figure: "cold agent -m, peak RSS vs jnano",
    target: "≤ 0.75×",
    measured: Number.isFinite(mem) ? `${mem.toFixed(2)}× (${fmt(rss(troupeCold), "MB")} / ${fmt(rss(jnanoCold), "MB")})` : "n/a",
    pass: Number.isFinite(mem) ? mem <= 0.75 : undefined,
  });
} else {
  record({ figure: "cold agent -m vs jnano", target: "≤ 0.5× wall, ≤ 0.75× RSS", measured: "jnano not installable here" });
}
record({ figure: "agent -m through the daemon", target: "≤ 150 ms", measured: fmt(ms(viaDaemon), "ms"), pass: ms(viaDaemon) <= 150 });
if (extraCa) {
  record({
    figure: "NODE_EXTRA_CA_CERTS at each node start",
    target: "(information: every command here pays it, jnano's too)",
    measured: `${fmt(cpu(floor) - cpu(floorNoCa), "ms")} CPU, ${fmt(ms(floor) - ms(floorNoCa), "ms")} wall`,
  });
}
record({
  figure: "cold agent -m CPU, code cache vs none",
  target: "(information)",
  measured: `${(cpu(troupeCold) / cpu(troupeNoCache)).toFixed(2)}× (${fmt(cpu(troupeCold), "ms")} / ${fmt(cpu(troupeNoCache), "ms")})`,
});
