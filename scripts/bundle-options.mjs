// How troupe's code is compiled into one CommonJS file: the CLI bundle (scripts/build.mjs) and the
// in-process benches' bundle (scripts/build-bench.mjs) share it, so the benches run the code as it ships.
import { readFile } from "node:fs/promises";
import { Buffer } from "node:buffer";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";

/** Packages bundled into dist/; every other bare import stays an import from node_modules. */
export const INLINE = new Set([
  ...["zod", "openai", "xstate", "rxjs", "commander", "jsonrepair", "tinyglobby", "ipaddr.js", "fastest-levenshtein", "isbinaryfile"],
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
      args.importer.includes(`${"node_modules"}/classic-level/`) ? { path: "classic-level-binding", namespace: "troupe-binding" } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: "troupe-binding" }, () => ({ contents: levelBinding(b.initialOptions.outdir), loader: "js" }));
    b.onResolve({ filter: /^classic-level\/binding\.js$/ }, (args) => ({ path: args.path, external: true }));
    // commander requires node:child_process (with dgram and the rest, ~10 ms) for executable
    // subcommands, which troupe has none of: required when one would be spawned, not at every start.
    b.onLoad({ filter: /commander[\\/]lib[\\/]command\.js$/ }, async (args) => {
      const source = await readFile(args.path, "utf8");
      const eager = "const childProcess = require('node:child_process');";
      if (!source.includes(eager)) throw new Error(`build: ${args.path} no longer has ${eager} (commander changed): update scripts/build.mjs`);
      return { contents: source.replace(eager, "const childProcess = { spawn: (...a) => require('node:child_process').spawn(...a) };"), loader: "js" };
    });
    // pino requires worker_threads (~10 ms) for its worker transports (thread-stream) and for a check
    // in the destinations it makes itself: troupe writes through pino.multistream and uses neither.
    b.onResolve({ filter: /^thread-stream$/ }, (args) => (args.importer.includes("pino") ? { path: "thread-stream", namespace: "troupe-stub" } : undefined));
    b.onLoad({ filter: /.*/, namespace: "troupe-stub" }, () => ({
      contents: "module.exports = function ThreadStream() { throw new Error(\"pino's worker transports are left out of troupe's build (scripts/build.mjs)\"); };",
      loader: "js",
    }));
    b.onLoad({ filter: /pino[\\/]lib[\\/]tools\.js$/ }, async (args) => {
      const source = await readFile(args.path, "utf8");
      const eager = "const { isMainThread } = require('worker_threads')";
      const use = "if (!opts.sync && isMainThread) {";
      if (!source.includes(eager) || !source.includes(use)) throw new Error(`build: ${args.path} changed (pino's worker_threads use): update scripts/build.mjs`);
      return { contents: source.replace(eager, "").replace(use, "if (!opts.sync && require('worker_threads').isMainThread) {"), loader: "js" };
    });
    // sonic-boom (pino's file writer) requires node:assert (~5 modules) for one check when a stream
    // closes: loaded only if that check fails, where it throws the same AssertionError.
    b.onLoad({ filter: /sonic-boom[\\/]index\.js$/ }, async (args) => {
      const source = await readFile(args.path, "utf8");
      const eager = "const assert = require('assert')";
      if (!source.includes(eager)) throw new Error(`build: ${args.path} no longer has ${eager} (sonic-boom changed): update scripts/build.mjs`);
      return { contents: source.replace(eager, "const assert = (ok, message) => { if (!ok) require('assert')(ok, message) }"), loader: "js" };
    });
    b.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (args.path.includes("node_modules")) return undefined;
      const source = await readFile(args.path, "utf8");
      return { contents: source.replace(/^import \{ z \} from "zod";$/m, 'import * as z from "zod";'), loader: "ts" };
    });
  },
};

/**
 * classic-level's binding.js is `require("node-gyp-build")(__dirname)`: at every start it compiles
 * node-gyp-build (no code cache for node_modules) and searches classic-level's folders for the
 * native file that fits (~2 ms of a cold `agent -m`, measured). The build, which runs where the
 * package is installed (`npm ci` runs it), asks node-gyp-build once and writes down where that file
 * is, relative to the bundle; the bundle loads it from there, and goes through binding.js as
 * before when it cannot (node_modules rearranged since the build, another platform's install).
 */
function levelBinding(outdir) {
  const classicLevel = nodeModule("classic-level");
  const found = createRequire(join(classicLevel, "package.json"))("node-gyp-build").path(classicLevel);
  const fromBundle = JSON.stringify(relative(outdir, found));
  return `let binding;
try {
  binding = require(require("node:path").join(__dirname, ${fromBundle}));
} catch {
  binding = require("classic-level/binding.js");
}
module.exports = binding;`;
}

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

/**
 * bin/troupe.js calls the bundle with these, in this order. `__imp_` is import() as bin/troupe.js
 * makes it: code compiled by vm.Script from a V8 code cache loses Node's dynamic import callback
 * ("A dynamic import callback was not specified"), so the bundle's own import() calls (of ES module
 * packages, of hook modules) go through bin/troupe.js's. Same length as `import`: the source map holds.
 */
const WRAPPER_PARAMS = "exports, require, module, __filename, __dirname, __imp_";
/** A dynamic import() in the bundle's code (not in a string: those are quoted, e.g. `import('node:buffer')` in a message). */
const DYNAMIC_IMPORT = /(?<![\w$.'"`])import\((?=["(])/g;

/** esbuild's options for a bundle; the caller adds absWorkingDir, entryPoints, outdir and outExtension. */
export const bundleOptions = {
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  plugins: [treeShakable, externalExcept(INLINE)],
  sourcemap: "linked",
  minifyWhitespace: true,
  minifySyntax: true,
  // Non-ASCII characters escaped: bin/troupe.js reads the file as latin1, faster than decoding UTF-8.
  charset: "ascii",
  // import.meta.url (createRequire, the package root) is the bundle's own file URL.
  define: { "import.meta.url": "__troupeImportMetaUrl" },
  // The file is the function Node wraps a CommonJS module in, which bin/troupe.js compiles and calls:
  // wrapped here, it need not make a second 1.7 MB string of it at every start.
  banner: { js: `(function (${WRAPPER_PARAMS}) {"use strict"; var __troupeImportMetaUrl = require("node:url").pathToFileURL(__filename).href;` },
  footer: { js: "})" },
  logLevel: "warning",
  write: false,
};

/** An output file of a build with bundleOptions as written: the bundle's import() calls made `__imp_(`, checked ASCII. */
export function finished(out) {
  if (!out.path.endsWith(".cjs")) return out;
  const file = { path: out.path, contents: Buffer.from(out.text.replace(DYNAMIC_IMPORT, "__imp_(")) };
  if (file.contents.some((byte) => byte > 0x7f)) throw new Error(`build: ${out.path} is not ASCII (bin/troupe.js reads it as latin1)`);
  return file;
}
