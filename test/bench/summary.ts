import { appendFileSync, existsSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * `npm run bench` runs several scripts; each records its figures here and the last one
 * (report.bench.ts) prints them as one table: figure, target, measured, pass or fail.
 */
const FILE = process.env.TROUPE_BENCH_SUMMARY ?? join(tmpdir(), "troupe-bench-summary.jsonl");

export interface Row {
  figure: string;
  target: string;
  measured: string;
  /** undefined: nothing to judge (a figure printed for information, or not measurable here). */
  pass?: boolean;
}

export function record(row: Row): void {
  appendFileSync(FILE, `${JSON.stringify(row)}\n`);
}

export function startSummary(): void {
  rmSync(FILE, { force: true });
}

export function readSummary(): Row[] {
  if (!existsSync(FILE)) return [];
  return readFileSync(FILE, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Row);
}
