// `npm run build` (and `npm ci`, through `prepare`): the CLI compiled to plain JavaScript in dist/,
// so a command starts without compiling TypeScript. One ESM bundle of troupe's own code, split at
// every dynamic import so a command loads only the chunks it uses. Pure-JavaScript libraries made of
// many small modules (zod, the openai SDK, xstate, rxjs) are bundled in too: Node loads one chunk
// faster than a hundred files. The rest of node_modules (native LevelDB, pino's worker transports,
// grammy, linkedom, the MCP SDK) stays external, loaded from node_modules as is.
// Chunks sit directly in dist/, one level below the package root (src/package-root.ts relies on it).
import { build } from "esbuild";
import { rm } from "node:fs/promises";
import { fileURLToPath } from "node:url";

/** Packages bundled into dist/; every other bare import stays an import from node_modules. */
const INLINE = new Set(["zod", "openai", "xstate", "rxjs", "commander", "jsonrepair", "yaml", "tinyglobby", "ipaddr.js", "fastest-levenshtein", "isbinaryfile"]);

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
await rm(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: { main: "src/cli/main.ts" },
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  plugins: [externalExcept(INLINE)],
  chunkNames: "[name]-[hash]",
  sourcemap: "linked",
  // Bundled CommonJS (commander) requires Node's built-ins; an ES module has no require of its own.
  banner: { js: 'import { createRequire as __troupeRequire } from "node:module"; const require = __troupeRequire(import.meta.url);' },
  logLevel: "warning",
});
