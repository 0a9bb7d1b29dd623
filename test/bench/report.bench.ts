/** The last step of `npm run bench`: every script's figures in one table. */
import { readSummary } from "./summary.js";

const rows = readSummary();
const widths = [
  Math.max(6, ...rows.map((r) => r.figure.length)),
  Math.max(6, ...rows.map((r) => r.target.length)),
  Math.max(8, ...rows.map((r) => r.measured.length)),
];
const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join("  ");
console.log("\n## summary");
console.log(line(["figure", "target", "measured", "result"]));
for (const r of rows) console.log(line([r.figure, r.target, r.measured, r.pass === undefined ? "-" : r.pass ? "pass" : "FAIL"]));
