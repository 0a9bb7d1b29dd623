// The in-process benches' bundle (test/bench/harness.ts runs it first): test/bench/bundle-entry.ts
// (createDaemon, loadConfig) compiled as the CLI is (scripts/bundle-options.mjs), so a bench runs
// the code users run, not troupe's source under tsx (whose keepNames wrapping and loader hook the
// bundle has neither of). Into dist-bench/ (git-ignored, not part of the package), one level below
// the package root as dist/ is (src/package-root.ts relies on it).
import { build } from "esbuild";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { Buffer } from "node:buffer";
import { fileURLToPath } from "node:url";
import { bundleOptions, finished } from "./bundle-options.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const outdir = `${root}dist-bench`;
const result = await build({
  ...bundleOptions,
  absWorkingDir: root,
  entryPoints: { "troupe-bench": "test/bench/bundle-entry.ts" },
  outdir,
  outExtension: { ".js": ".cjs" },
});
await mkdir(outdir, { recursive: true });
for (const out of result.outputFiles) {
  const file = finished(out);
  const old = await readFile(file.path).catch(() => undefined);
  if (old && Buffer.from(file.contents).equals(old)) continue;
  // Renamed into place: a bench starting meanwhile reads the old file or the new one, never half of one.
  await writeFile(`${file.path}.${process.pid}.tmp`, file.contents);
  await rename(`${file.path}.${process.pid}.tmp`, file.path);
}
