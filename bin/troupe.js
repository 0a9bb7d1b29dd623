#!/usr/bin/env node
// The CLI runs the compiled JavaScript in dist/ (built by `npm run build`, which `npm ci` and
// `npm install` run through the `prepare` script), so a command starts without compiling TypeScript.
import { existsSync, readFileSync } from "node:fs";

// `troupe --version` alone answers from package.json without loading the CLI (what commander prints).
const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === "--version" || args[0] === "-v")) {
  process.stdout.write(`${JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version}\n`);
} else {
  const main = new URL("../dist/main.js", import.meta.url);
  if (!existsSync(main)) {
    console.error("troupe: the compiled CLI (dist/main.js) is missing; run npm run build (npm ci does it too) in the troupe folder");
    process.exit(1);
  }
  await import(main.href);
}
