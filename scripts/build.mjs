// `npm run build` (and `npm ci`, through `prepare`): the CLI compiled to plain JavaScript in dist/,
// so a command starts without compiling TypeScript. One ESM bundle of troupe's own code, split at
// every dynamic import so a command loads only the chunks it uses. Pure-JavaScript libraries made of
// many small modules (zod, the openai SDK, xstate, rxjs) are bundled in too: Node loads one chunk
// faster than a hundred files. The rest of node_modules (native LevelDB, pino's worker transports,
// grammy, linkedom, the MCP SDK) stays external, loaded from node_modules as is.
// Chunks sit directly in dist/, one level below the package root (src/package-root.ts relies on it).
import { build } from "esbuild";
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { Buffer } from "node:buffer";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** Packages bundled into dist/; every other bare import stays an import from node_modules. */
const INLINE = new Set([
  ...["zod", "openai", "xstate", "rxjs", "commander", "jsonrepair", "yaml", "tinyglobby", "ipaddr.js", "fastest-levenshtein", "isbinaryfile"],
  // LevelDB's JavaScript (some 35 CommonJS files, resolved one by one at every start); its native
  // binding stays in node_modules, loaded by classic-level/binding.js from where it is built.
  ...["level", "classic-level", "abstract-level", "level-supports", "level-transcoder", "module-error", "maybe-combine-errors"],
  // pino and what it requires (troupe writes through pino.multistream, never a worker transport), the
  // glob tool's matcher, croner: small files every start resolved one by one from node_modules.
  ...["pino", "pino-std-serializers", "@pinojs/redact", "quick-format-unescaped", "sonic-boom", "atomic-sleep", "on-exit-leak-free", "thread-stream", "safe-stable-stringify"],
  ...["picomatch", "fdir", "croner", "tslib"],
]);

const requireHere = createRequire(import.meta.url);
const nodeModule = (name) => join(dirname(requireHere.resolve(`${name}/package.json`)));

/**
 * Resolution that keeps the bundle small: rxjs (and tslib) from its ES module build (its "node" condition
 * picks CommonJS, which cannot be tree-shaken: the whole library, ~350 KB, in every command), and
 * `import { z } from "zod"` read as `import * as z from "zod"` in troupe's own files (the same
 * namespace; esbuild tree-shakes only the latter, the former pulls in zod's ~40 locales).
 */
const treeShakable = {
  name: "tree-shakable",
  setup(b) {
    b.onResolve({ filter: /^rxjs$/ }, () => ({ path: join(nodeModule("rxjs"), "dist", "esm", "index.js") }));
    // rxjs's ES modules import their helpers from tslib: its ES module build, bundled, only the helpers used.
    b.onResolve({ filter: /^tslib$/ }, () => ({ path: join(nodeModule("tslib"), "tslib.es6.mjs") }));
    b.onResolve({ filter: /^\.\/binding(\.js)?$/ }, (args) =>
      args.importer.includes(`${"node_modules"}/classic-level/`) ? { path: "classic-level/binding.js", external: true } : undefined,
    );
    b.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (args.path.includes("node_modules")) return undefined;
      const source = await readFile(args.path, "utf8");
      return { contents: source.replace(/^import \{ z \} from "zod";$/m, 'import * as z from "zod";'), loader: "ts" };
    });
  },
};

function externalExcept(inline) {
  return {
    name: "external-except",
    setup(b) {
      b.onResolve({ filter: /^[^./]/ }, (args) => {
        const name = args.path.startsWith("@") ? args.path.split("/").slice(0, 2).join("/") : args.path.split("/")[0];
        return inline.has(name) ? undefined : { path: args.path, external: true };
      });
    },
  };
}

const root = fileURLToPath(new URL("..", import.meta.url));
const outdir = `${root}dist`;
// A CLI may be running from dist/ while it is rebuilt (a test run building it beside a running
// daemon): only files whose content changed are rewritten, and with --keep-stale (the test set-up)
// chunks of an earlier build are left for processes that may still import them.
const keepStale = process.argv.includes("--keep-stale");
const result = await build({
  absWorkingDir: root,
  entryPoints: { main: "src/cli/main.ts" },
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  plugins: [treeShakable, externalExcept(INLINE)],
  chunkNames: "[name]-[hash]",
  sourcemap: "linked",
  minifyWhitespace: true,
  minifySyntax: true,
  // Bundled CommonJS (commander) requires Node's built-ins; an ES module has no require of its own.
  banner: { js: 'import { createRequire as __troupeRequire } from "node:module"; const require = __troupeRequire(import.meta.url);' },
  logLevel: "warning",
  write: false,
});

await mkdir(outdir, { recursive: true });
const fresh = new Set();
for (const file of result.outputFiles) {
  fresh.add(file.path);
  const old = await readFile(file.path).catch(() => undefined);
  if (old && Buffer.from(file.contents).equals(old)) continue;
  // Renamed into place: a process starting meanwhile reads the old file or the new one, never half of one.
  await writeFile(`${file.path}.${process.pid}.tmp`, file.contents);
  await rename(`${file.path}.${process.pid}.tmp`, file.path);
}
if (!keepStale) {
  for (const name of await readdir(outdir)) if (!fresh.has(join(outdir, name))) await rm(join(outdir, name), { recursive: true, force: true });
}
