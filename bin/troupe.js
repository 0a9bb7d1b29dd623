#!/usr/bin/env node
// The CLI runs the compiled JavaScript in dist/ (built by `npm run build`, which `npm ci` and
// `npm install` run through the `prepare` script), so a command starts without compiling TypeScript.
// This file is CommonJS (bin/package.json says so): Node starts a CommonJS entry ~10 ms sooner than
// an ES module one, which is what `troupe --version` costs.
"use strict";
const { accessSync, closeSync, constants, existsSync, fstatSync, openSync, readFileSync, renameSync, unlinkSync, writeFileSync } = require("node:fs");
const { dirname, join, resolve } = require("node:path");
const { Buffer } = require("node:buffer");

// `troupe --version` alone answers from package.json without loading the CLI (what commander prints).
const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === "--version" || args[0] === "-v")) {
  process.stdout.write(`${require("../package.json").version}\n`);
} else {
  // Memory of a short-lived command; the gateway keeps V8's defaults (named anywhere: `troupe --config x
  // gateway` too; a message that says "gateway" only costs memory). Node's fetch parses HTTP with llhttp
  // built to WebAssembly, and V8's optimizing wasm compiler takes ~30 MB for it: more than a one-shot
  // command's whole heap, so commands keep the baseline compiler (Liftoff). And the young generation
  // stays at its first size (1 MB semi-spaces) instead of doubling as a command allocates: 5 MB less
  // peak RSS for a cold `agent -m`, no more CPU (measured; the size itself is fixed once V8 has started).
  const profile = cacheProfile(args);
  const bundle = readBundle(join(__dirname, "..", "dist", "troupe.cjs"), profile);
  // Nor `agent` through a running daemon: it only talks HTTP (no wasm, a small heap, nothing hot), and
  // loading node:v8 to set them cost it ~6 ms of CPU for no RSS (measured).
  if (profile !== "gateway" && profile !== "agent-daemon") {
    // Any V8 flag changed at run time makes V8 refuse the code cache Node ships for its own modules, so
    // a built-in loaded afterwards is compiled from source: ~3x the time (node:http 1.1 → 3.4 ms,
    // node:crypto 1.0 → 2.9). The built-ins this command loaded when its code cache was written are
    // loaded first (a cold `agent -m`: 7–10 ms less wall time, measured).
    for (const name of bundle.builtins.filter(publicBuiltin)) {
      try {
        require(`node:${name}`);
      } catch {
        // Only slower: the command loads it (or does without it) as it would have.
      }
    }
    const v8 = require("node:v8");
    v8.setFlagsFromString("--liftoff-only");
    v8.setFlagsFromString("--semi-space-growth-factor=1");
    // TurboFan (V8's optimizing compiler) only after 10× the usual budget of bytecode run, and no
    // Sparkplug (its baseline compiler): a one-shot command ends before any function is that hot, so
    // the compilers' machine code in the node binary is never paged in (peak RSS of a cold `agent -m`
    // 67 → 63 MB with the budget, 1.2 MB less without Sparkplug; CPU the same within noise, also for
    // a 60 KB input run through the tokenizer, measured); a long chat's hot loops are still optimized.
    v8.setFlagsFromString("--interrupt-budget=675840");
    v8.setFlagsFromString("--no-sparkplug");
  }
  runBundle(bundle);
}

/**
 * Which code cache a command uses: one per command, since a cache holds what the run that wrote it
 * compiled (`agent` in-process runs the whole runtime; through a running daemon, only its client).
 * Help of any command shares one. The command is the first word that is not an option ("gateway"
 * as a message's text is not the gateway).
 */
function cacheProfile(args) {
  if (args.includes("-h") || args.includes("--help")) return "help";
  let command = "help";
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "-c" || args[i] === "--config" || args[i] === "-w" || args[i] === "--workspace") i++;
    else if (!args[i].startsWith("-")) {
      command = /^[a-z][a-z-]{0,30}$/.test(args[i]) ? args[i] : "other";
      break;
    }
  }
  return command === "agent" && daemonPidfileExists(args) ? "agent-daemon" : command;
}

/** Whether the data dir has a daemon's pid file (src/paths.ts finds the data dir; this is only a hint). */
function daemonPidfileExists(args) {
  const expand = (p) => (p.startsWith("~/") ? join(process.env.HOME ?? "", p.slice(2)) : p);
  const at = args.findIndex((a) => a === "-c" || a === "--config");
  const config = (at >= 0 ? args[at + 1] : args.find((a) => a.startsWith("--config="))?.slice(9)) ?? process.env.TROUPE_CONFIG?.trim();
  const home = process.env.TROUPE_HOME?.trim();
  const dataDir = home ? resolve(expand(home)) : config ? dirname(resolve(expand(config))) : join(process.env.HOME ?? "", ".troupe");
  return existsSync(join(dataDir, "daemon.pid"));
}

/**
 * Reads the bundle (CommonJS) and the V8 code cache beside it (dist/troupe.cjs.<profile>.cache): a
 * command that finds one skips compiling what it runs, a quarter of a cold `troupe agent -m`'s CPU
 * (280 → 210 ms, test/bench/startup.bench.ts). Written at the exit of a run that succeeded, when
 * missing or refused: it then holds everything that run compiled, and its first line names the
 * bundle it was made for and the Node built-ins that run loaded (loaded ahead by the next). V8
 * refuses a cache made by another Node or with other V8 flags; the bundle (size, mtime) is checked
 * here, since V8 checks only the source's length. A cache that cannot be read or written is only slower.
 */
function readBundle(file, profile) {
  let source;
  let key;
  try {
    const fd = openSync(file, "r");
    const { size, mtimeMs } = fstatSync(fd);
    // ASCII (scripts/build.mjs makes sure): read as latin1, which is a copy, not a UTF-8 decode.
    source = readFileSync(fd, "latin1");
    closeSync(fd);
    key = JSON.stringify([process.version, profile, process.execArgv, process.env.NODE_OPTIONS ?? "", size, mtimeMs]);
  } catch {
    console.error("troupe: the compiled CLI (dist/troupe.cjs) is missing; run npm run build (npm ci does it too) in the troupe folder");
    process.exit(1);
  }
  // TROUPE_NO_CODE_CACHE=1: neither read nor written (the start-up bench measures what the cache saves).
  const cacheFile = process.env.TROUPE_NO_CODE_CACHE ? undefined : `${file}.${profile}.cache`;
  const cache = cacheFile ? readCache(cacheFile, key) : undefined;
  return { file, source, key, cacheFile, cachedData: cache?.data, builtins: cache?.builtins ?? [], vm: require("node:vm"), module: require("node:module") };
}

/** Runs the bundle as Node would run it, through vm.Script with its code cache (see readBundle). */
function runBundle({ file, source, key, cacheFile, cachedData, vm, module: nodeModule }) {
  // The file is a function expression (scripts/build.mjs wraps the bundle as Node wraps a CommonJS module).
  const script = new vm.Script(source, {
    filename: file,
    cachedData,
  });
  if (process.env.TROUPE_CODE_CACHE_DEBUG) console.error(`code cache ${cachedData ? (script.cachedDataRejected ? "refused" : "used") : "missing"}`);
  // Written only by a run that succeeded (one that failed early compiled little of its command, and an
  // accepted cache is kept until the next build), and only where it can be written (a read-only
  // install would pay for serialising the cache at every exit and never gain).
  if (cacheFile && (!cachedData || script.cachedDataRejected) && writable(dirname(cacheFile))) {
    process.once("exit", (code) => {
      if (code === 0) writeCache(cacheFile, key, script, nodeModule.builtinModules);
    });
  }
  const module = { exports: {} };
  // A run that never settles exits 13, as an ES module entry whose top-level await never settles;
  // else it would exit 0 as if it had succeeded. The code stands until the command's run has ended.
  process.exitCode = 13;
  // The bundle's import() calls (ES module packages such as isomorphic-git and unpdf, hook modules)
  // are this file's (scripts/build.mjs says why): resolved from bin/, beside dist/ in the same package.
  const dynamicImport = (specifier) => import(specifier);
  script.runInThisContext()(module.exports, nodeModule.createRequire(file), module, file, dirname(file), dynamicImport);
  module.exports.done.then(() => {
    if (process.exitCode === 13) process.exitCode = undefined;
  }, (err) => {
    console.error(err);
    process.exit(1);
  });
}

/**
 * The cached data after its first line, when that line names this bundle and profile, and the
 * built-ins the run that wrote it loaded (after a tab: the key is JSON, which has none).
 */
function readCache(cacheFile, key) {
  try {
    const buf = readFileSync(cacheFile);
    const nl = buf.indexOf(10);
    if (nl <= 0) return undefined;
    const [head, builtins = ""] = buf.toString("utf8", 0, nl).split("\t");
    return head === key ? { data: buf.subarray(nl + 1), builtins: builtins.split(" ").filter(Boolean) } : undefined;
  } catch {
    return undefined;
  }
}

function writable(dir) {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Built-ins that may be loaded ahead, in any order: not Node's underscored ones (_tls_common,
 * _tls_wrap, _http_agent…), which the process list names before the module that loads them. Loaded
 * first, _tls_wrap took a half-built tls, and every https request of the command then failed with
 * "tls.createSecureContext is not a function"; their public module (tls, http) loads them itself.
 */
function publicBuiltin(name) {
  return !name.startsWith("_");
}

/**
 * The public built-ins this process has loaded (node:http, node:crypto...: those a `require` can load
 * ahead), but those whose loading warns (deprecated or experimental), which would warn for nothing.
 * (A function of its own, no module-level constant: help exits while the bundle runs, before this
 * file's last lines have run.)
 */
function loadedBuiltins(publicNames) {
  const warnOnLoad = ["punycode", "sys", "wasi"];
  const names = new Set(publicNames.filter((n) => !warnOnLoad.includes(n) && publicBuiltin(n)));
  return process.moduleLoadList.flatMap((m) => (m.startsWith("NativeModule ") && names.has(m.slice(13)) ? [m.slice(13)] : []));
}

function writeCache(cacheFile, key, script, publicNames) {
  const tmp = `${cacheFile}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, Buffer.concat([Buffer.from(`${key}\t${loadedBuiltins(publicNames).join(" ")}\n`), script.createCachedData()]));
    // Renamed into place: a command starting meanwhile reads the old cache or the new one, never half of one.
    renameSync(tmp, cacheFile);
  } catch {
    // dist/ not writable (an install owned by another user) or the disk full: commands run without a cache.
    try {
      unlinkSync(tmp);
    } catch {
      // never written
    }
  }
}
