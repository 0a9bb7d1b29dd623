#!/usr/bin/env node
// The CLI runs the compiled JavaScript in dist/ (built by `npm run build`, which `npm ci` and
// `npm install` run through the `prepare` script), so a command starts without compiling TypeScript.
import { existsSync } from "node:fs";

const main = new URL("../dist/main.js", import.meta.url);
if (!existsSync(main)) {
  console.error("troupe: the compiled CLI (dist/main.js) is missing; run npm run build (npm ci does it too) in the troupe folder");
  process.exit(1);
}
await import(main.href);
