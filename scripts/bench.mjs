#!/usr/bin/env node
/**
 * `npm run bench`: the scripts of test/bench/ one after another, then the summary table of every
 * figure they recorded (report.bench.ts). `npm run bench -- --soak` runs the 30-minute soak instead
 * (`npm run bench:soak` is the same). `--only daemon,durability` runs just those scripts, then the table.
 * Each script runs in its own node process under tsx; the figures go to a summary file of this run
 * (TROUPE_BENCH_SUMMARY, or a fresh one in the temp dir), so two runs at once don't mix their tables.
 * Stops at the first script that fails, with its exit code.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** [script, node flags]: --expose-gc where the script collects garbage before reading RSS. */
const SCRIPTS = [
  ["startup", []],
  ["model-client", []],
  ["idle", []],
  ["daemon", ["--expose-gc"]],
  ["durability", []],
  ["subagents", []],
  ["checkpoint", []],
  ["store-ops", []],
  ["storage", []],
  ["cron", []],
  ["documents", ["--expose-gc"]],
];
const SOAK = ["soak", ["--experimental-websocket"]];

const args = process.argv.slice(2);
const usage = `use --soak, or --only <script,...> (${SCRIPTS.map(([s]) => s).join(", ")})`;
const onlyAt = args.findIndex((a) => a === "--only" || a.startsWith("--only="));
const only = onlyAt < 0 ? undefined : args[onlyAt].startsWith("--only=") ? args[onlyAt].slice("--only=".length) : (args[onlyAt + 1] ?? "");
const unknown = args.filter((a, i) => a !== "--soak" && i !== onlyAt && !(i === onlyAt + 1 && args[onlyAt] === "--only"));
if (unknown.length || only === "" || (only !== undefined && args.includes("--soak"))) {
  const why = unknown.length ? `unknown argument ${unknown.join(" ")}` : only === "" ? "--only names no script" : "--soak runs the soak alone, without --only";
  console.error(`npm run bench: ${why}; ${usage}`);
  process.exit(2);
}
let plan = SCRIPTS;
if (only) {
  const names = only.split(",").filter(Boolean);
  const missing = names.filter((n) => !SCRIPTS.some(([s]) => s === n));
  if (missing.length) {
    console.error(`npm run bench: no bench script ${missing.join(", ")}; the scripts are ${SCRIPTS.map(([s]) => s).join(", ")}`);
    process.exit(2);
  }
  plan = SCRIPTS.filter(([s]) => names.includes(s));
}
if (args.includes("--soak")) plan = [SOAK];

const env = { ...process.env, TROUPE_BENCH_SUMMARY: process.env.TROUPE_BENCH_SUMMARY ?? join(mkdtempSync(join(tmpdir(), "troupe-bench-")), "summary.jsonl") };
rmSync(env.TROUPE_BENCH_SUMMARY, { force: true });
const run = (name, flags) => spawnSync(process.execPath, [...flags, "--import", "tsx", `test/bench/${name}.bench.ts`], { stdio: "inherit", env }).status ?? 1;

for (const [name, flags] of plan) {
  const status = run(name, flags);
  if (status !== 0) {
    console.error(`\nnpm run bench: ${name}.bench.ts failed (exit ${status})`);
    process.exit(status);
  }
}
if (plan[0] !== SOAK) process.exit(run("report", []));
