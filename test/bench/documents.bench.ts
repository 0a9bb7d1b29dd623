/**
 * read_file on documents (part of `npm run bench`): a 200-page PDF (one call reads 20 pages), a
 * 10,000-row XLSX and a 2,000-paragraph DOCX, built here. Printed: the time of one read (the first,
 * which loads the library, and a warm one) and the heap it leaves behind. Targets: a warm read of
 * each within 2 s on a loaded 2-core machine, and no more than 64 MB of heap kept after the reads.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readFileTool } from "../../src/tools/builtin/read-file.js";
import { makeDocx, makePdf, makeXlsx } from "../helpers/documents.js";
import { runner, sandboxOf } from "../helpers/tools.js";
import { record } from "./summary.js";

const ws = await mkdtemp(join(tmpdir(), "troupe-bench-docs-"));
const run = runner([readFileTool(sandboxOf(ws))], ws, 1_000_000);
await writeFile(join(ws, "long.pdf"), makePdf(Array.from({ length: 200 }, (_, i) => `Page ${i + 1}: ${"lorem ipsum ".repeat(8)}`)));
await writeFile(join(ws, "big.xlsx"), makeXlsx([["Data", Array.from({ length: 10_000 }, (_, i) => [`row ${i}`, i, i * 2.5, i % 2 === 0])]]));
await writeFile(join(ws, "long.docx"), makeDocx(Array.from({ length: 2_000 }, (_, i) => `Paragraph ${i}: ${"dolor sit amet ".repeat(5)}`)));

const heapBefore = process.memoryUsage().heapUsed;
console.log("## read_file on documents");
for (const [path, args] of [["long.pdf", { pages: "181-200" }], ["big.xlsx", {}], ["long.docx", {}]] as const) {
  const times: number[] = [];
  let out = "";
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    out = await run("read_file", { path, ...args });
    times.push(performance.now() - t0);
  }
  if (out.startsWith("Error")) throw new Error(`${path}: ${out}`);
  const warm = Math.min(...times.slice(1));
  console.log(`${path}: first read ${times[0]!.toFixed(0)} ms, warm ${warm.toFixed(0)} ms, ${out.length} chars`);
  record({ figure: `read_file ${path} (warm)`, target: "< 2000 ms", measured: `${warm.toFixed(0)} ms`, pass: warm < 2_000 });
}
globalThis.gc?.();
const kept = (process.memoryUsage().heapUsed - heapBefore) / 1024 / 1024;
console.log(`heap kept after the reads: ${kept.toFixed(1)} MB${globalThis.gc ? "" : " (run with --expose-gc for a settled figure)"}`);
record({ figure: "heap kept after document reads", target: "< 64 MB", measured: `${kept.toFixed(1)} MB`, pass: kept < 64 });
await rm(ws, { recursive: true, force: true });
