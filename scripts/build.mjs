// `npm run build` (and `npm ci`, through `prepare`): the CLI compiled to plain JavaScript in dist/,
// so a command starts without compiling TypeScript. One CommonJS file, dist/troupe.cjs, holding
// troupe's own code and the pure-JavaScript libraries made of many small modules (zod, the openai
// SDK, xstate, rxjs...): a module imported lazily (`await import("./x.js")`) is still evaluated only
// when a command imports it, but it is compiled with the rest, and bin/troupe.js loads the file with
// a V8 code cache (CommonJS through vm.Script; Node 20 has no compile cache for ES modules), so a
// command skips most compile work. The rest of node_modules (native LevelDB, grammy, linkedom, the
// MCP SDK...) stays external, loaded from node_modules as is.
// How the code is compiled (esbuild's options, the plugins) is in scripts/bundle-options.mjs.
// The file sits directly in dist/, one level below the package root (src/package-root.ts relies on it).
import { build } from "esbuild";
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { Buffer } from "node:buffer";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleOptions, finished } from "./bundle-options.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const outdir = `${root}dist`;
// A CLI may be running from dist/ while it is rebuilt (a test run building it beside a running
// daemon): only files whose content changed are rewritten (a process reads the bundle whole, at its
// start), and with --keep-stale (the test set-up) files of an earlier build are left as they are.
const keepStale = process.argv.includes("--keep-stale");
const result = await build({
  ...bundleOptions,
  absWorkingDir: root,
  entryPoints: { troupe: "src/cli/main.ts" },
  outdir,
  outExtension: { ".js": ".cjs" },
});

await mkdir(outdir, { recursive: true });
const fresh = new Set();
let bundleChanged = false;
for (const out of result.outputFiles) {
  const file = finished(out);
  fresh.add(file.path);
  const old = await readFile(file.path).catch(() => undefined);
  if (old && Buffer.from(file.contents).equals(old)) continue;
  if (file.path.endsWith(".cjs")) bundleChanged = true;
  // Renamed into place: a process starting meanwhile reads the old file or the new one, never half of one.
  await writeFile(`${file.path}.${process.pid}.tmp`, file.contents);
  await rename(`${file.path}.${process.pid}.tmp`, file.path);
}
if (!keepStale) {
  // Code caches (bin/troupe.js) are kept while the bundle is the same: each names the bundle it was
  // made for, and a command rewrites its own when that changed; a new bundle drops them all.
  for (const name of await readdir(outdir)) {
    if (!fresh.has(join(outdir, name)) && (bundleChanged || !name.endsWith(".cache"))) await rm(join(outdir, name), { recursive: true, force: true });
  }
}
