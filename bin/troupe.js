#!/usr/bin/env node
// The CLI runs the compiled JavaScript in dist/ (built by `npm run build`, which `npm ci` and
// `npm install` run through the `prepare` script), so a command starts without compiling TypeScript.
// This file is CommonJS (bin/package.json says so): Node starts a CommonJS entry ~10 ms sooner than
// an ES module one, which is what `troupe --version` costs; dist/ is ES modules, imported from here.
"use strict";
const { existsSync } = require("node:fs");
const { join } = require("node:path");
const { pathToFileURL } = require("node:url");

// `troupe --version` alone answers from package.json without loading the CLI (what commander prints).
const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === "--version" || args[0] === "-v")) {
  process.stdout.write(`${require("../package.json").version}\n`);
} else {
  // Node's fetch (the model client's) parses HTTP with llhttp built to WebAssembly, and V8's optimizing
  // wasm compiler takes ~30 MB for it: more than a one-shot command's whole heap. Commands keep the
  // baseline compiler (Liftoff); the gateway, which parses every model response, keeps both (named
  // anywhere: `troupe --config x gateway` too; a message that says "gateway" only costs memory).
  if (!args.includes("gateway")) require("node:v8").setFlagsFromString("--liftoff-only");
  const main = join(__dirname, "..", "dist", "main.js");
  if (!existsSync(main)) {
    console.error("troupe: the compiled CLI (dist/main.js) is missing; run npm run build (npm ci does it too) in the troupe folder");
    process.exit(1);
  }
  // Run as an ES module entry, a CLI whose top-level await never settles exits 13; imported from here,
  // it would exit 0 as if it had succeeded. The code stands until the CLI's module has finished.
  process.exitCode = 13;
  import(pathToFileURL(main).href).then(() => {
    if (process.exitCode === 13) process.exitCode = undefined;
  }, (err) => {
    console.error(err);
    process.exit(1);
  });
}
