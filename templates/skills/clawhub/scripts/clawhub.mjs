#!/usr/bin/env node
// Finds and installs skills from a ClawHub-compatible registry (or any URL of a skill archive) into
// the workspace's skills/ folder.
import { Buffer } from "node:buffer";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { request as httpGet } from "node:http";
import { request as httpsGet } from "node:https";
import { dirname, join, resolve } from "node:path";
import { URLSearchParams, fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const USAGE = `Usage:
  node clawhub.mjs search <words> [--limit N]
  node clawhub.mjs install <slug | https://…/skill.zip> [--version V] [--force]
  node clawhub.mjs list

Options:
  --registry URL   the registry (default: $CLAWHUB_REGISTRY, else https://clawhub.ai)
  --workdir DIR    the workspace; skills go to DIR/skills (default: the current folder)
  --limit N        search results to show (default 10)
  --version V      install this version instead of the latest
  --force          replace a skill that is already installed`;

export const DEFAULT_REGISTRY = "https://clawhub.ai";
/** Archives bigger than this (packed or unpacked) are refused: a skill is text and a few scripts. */
const MAX_BYTES = 50 * 1024 * 1024;
const FOLDER = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

class UsageError extends Error {}

// ---- HTTP, through the proxy the environment names (troupe's sandbox reaches the network only so)

function proxyFor(url) {
  const noProxy = (process.env.NO_PROXY ?? process.env.no_proxy ?? "").split(",").map((s) => s.trim()).filter(Boolean);
  const host = url.hostname;
  if (noProxy.some((n) => n === "*" || host === n.replace(/^\./, "") || host.endsWith(n.startsWith(".") ? n : `.${n}`))) return undefined;
  const value = url.protocol === "https:" ? process.env.HTTPS_PROXY ?? process.env.https_proxy : process.env.HTTP_PROXY ?? process.env.http_proxy;
  return value || process.env.ALL_PROXY || process.env.all_proxy || undefined;
}

async function agentFor(url) {
  const proxy = proxyFor(url);
  if (!proxy) return undefined;
  try {
    if (url.protocol === "https:") return new (await import("https-proxy-agent")).HttpsProxyAgent(proxy);
    return new (await import("http-proxy-agent")).HttpProxyAgent(proxy);
  } catch {
    throw new Error(`a proxy is set (${proxy}) but the proxy agent packages that ship with troupe cannot be loaded; run this script from troupe's built-in skills folder`);
  }
}

/** GET url (following up to 5 redirects); resolves with the body as a Buffer. */
export async function get(url, accept, redirects = 5) {
  const target = new URL(url);
  if (target.protocol !== "https:" && target.protocol !== "http:") throw new Error(`${url} is not an http(s) URL`);
  const agent = await agentFor(target);
  const send = target.protocol === "https:" ? httpsGet : httpGet;
  return new Promise((resolvePromise, reject) => {
    const req = send(target, { method: "GET", agent, headers: { accept, "user-agent": "troupe-clawhub-skill" }, timeout: 30_000 }, (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400 && res.headers.location) {
        res.resume();
        if (redirects === 0) return reject(new Error(`${url}: too many redirects`));
        return resolvePromise(get(new URL(res.headers.location, target).href, accept, redirects - 1));
      }
      const chunks = [];
      let size = 0;
      res.on("data", (c) => {
        size += c.length;
        if (size > MAX_BYTES) req.destroy(new Error(`${url}: the answer is over ${MAX_BYTES / 1024 / 1024} MB; not a skill`));
        else chunks.push(c);
      });
      res.on("end", () => {
        const body = Buffer.concat(chunks);
        if (status >= 200 && status < 300) return resolvePromise(body);
        const text = body.toString("utf8").trim().slice(0, 300);
        reject(new Error(`${url} answered ${status}${text ? `: ${text}` : ""}`));
      });
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`${url}: no answer within 30 s`)));
    req.on("error", (err) => reject(err.code === "ECONNREFUSED" ? new Error(`${url}: connection refused (is the registry address right?)`) : err));
    req.end();
  });
}

// ---- the archive

async function loadUnzip() {
  try {
    return (await import("fflate")).unzipSync;
  } catch {
    throw new Error("this script needs the fflate package, which ships with troupe: run it from troupe's built-in skills folder");
  }
}

/** The archive's files relative to the skill's root, and the name of the single top folder holding SKILL.md if it had one (taken off). */
export async function skillFiles(zip) {
  const unzipSync = await loadUnzip();
  let files;
  // Sizes are checked from the archive's directory before anything is unpacked (an entry is allocated at its claimed size).
  let claimed = 0;
  const tooBig = new Error(`the archive unpacks to over ${MAX_BYTES / 1024 / 1024} MB; not a skill`);
  try {
    files = unzipSync(new Uint8Array(zip), {
      filter(file) {
        claimed += file.originalSize;
        if (claimed > MAX_BYTES) throw tooBig;
        return true;
      },
    });
  } catch (err) {
    if (err === tooBig) throw err;
    throw new Error(`the download is not a zip archive (${err.message}); check the slug or URL`);
  }
  const entries = Object.entries(files).filter(([path]) => !path.endsWith("/") && !/(^|\/)(__MACOSX|\.DS_Store)(\/|$)/.test(path));
  let total = 0;
  for (const [path, data] of entries) {
    total += data.length;
    if (path.startsWith("/") || path.includes("\\") || /^[A-Za-z]:/.test(path) || path.split("/").some((p) => p === ".." || p === "")) {
      throw new Error(`the archive has an unsafe path "${path}"; refusing to install it`);
    }
  }
  if (total > MAX_BYTES) throw new Error(`the archive unpacks to over ${MAX_BYTES / 1024 / 1024} MB; not a skill`);
  if (entries.some(([p]) => p === "SKILL.md")) return { files: entries, top: undefined };
  const tops = new Set(entries.map(([p]) => p.split("/")[0]));
  const [top] = tops;
  if (tops.size === 1 && entries.some(([p]) => p === `${top}/SKILL.md`)) return { files: entries.map(([p, d]) => [p.slice(top.length + 1), d]), top };
  throw new Error("the archive has no SKILL.md at its root (nor in a single top folder); it is not a skill");
}

/** Writes the files as <skillsDir>/<name>, replacing an existing skill only with force; the old one stays until the new one is complete. */
export function place(files, skillsDir, name, force) {
  const dest = join(skillsDir, name);
  if (existsSync(dest) && !force) throw new Error(`${dest} already exists; add --force to replace it`);
  mkdirSync(skillsDir, { recursive: true });
  const staging = join(skillsDir, `.${name}.installing-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  for (const [path, data] of files) {
    const file = join(staging, path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, data, { mode: /^scripts\//.test(path) ? 0o755 : 0o644 });
  }
  if (existsSync(dest)) {
    const old = join(skillsDir, `.${name}.replaced-${process.pid}`);
    renameSync(dest, old);
    renameSync(staging, dest);
    rmSync(old, { recursive: true, force: true });
  } else {
    renameSync(staging, dest);
  }
  return dest;
}

const descriptionOf = (skillMd) => {
  const block = /^---\r?\n([\s\S]*?)\r?\n---/.exec(skillMd);
  const line = block?.[1].split(/\r?\n/).find((l) => l.startsWith("description:"));
  return line ? line.slice("description:".length).trim().replace(/^["']|["']$/g, "") : "";
};

// ---- commands

export async function install(what, { registry, workdir, version, force }) {
  const isUrl = /^https?:\/\//i.test(what);
  const slug = isUrl ? undefined : what.replace(/^@/, "");
  const fromWhat = isUrl ? new URL(what).pathname.split("/").filter(Boolean).pop()?.replace(/\.(skill|zip)$/i, "") : slug.split("/").pop();
  if (!isUrl && !(fromWhat && FOLDER.test(fromWhat))) throw new UsageError(`"${what}" is not a skill slug; give one like weather or owner/weather`);
  const url = isUrl ? what : `${registry.replace(/\/+$/, "")}/api/v1/download?${new URLSearchParams({ slug, ...(version ? { version } : {}) })}`;
  const { files, top } = await skillFiles(await get(url, "application/zip, application/octet-stream"));
  // A registry's slug names the folder; an archive from a URL is named by its own top folder (a .skill package) or its file name.
  const name = isUrl ? top ?? fromWhat : fromWhat;
  if (!name || !FOLDER.test(name)) throw new UsageError(`cannot make a skill folder name from "${what}"; use a URL ending in <name>.zip`);
  const dest = place(files, join(resolve(workdir), "skills"), name, force);
  return { dest, files: files.map(([p]) => p).sort(), description: descriptionOf(readFileSync(join(dest, "SKILL.md"), "utf8")) };
}

export async function search(query, { registry, limit }) {
  const url = `${registry.replace(/\/+$/, "")}/api/v1/search?${new URLSearchParams({ q: query, limit: String(limit) })}`;
  let data;
  try {
    data = JSON.parse((await get(url, "application/json")).toString("utf8"));
  } catch (err) {
    if (err instanceof SyntaxError) throw new Error(`${url} did not answer with JSON; is ${registry} a ClawHub registry?`);
    throw err;
  }
  const list = Array.isArray(data) ? data : data.results ?? data.items ?? data.skills ?? [];
  return list.slice(0, limit).map((r) => ({
    slug: r.slug ?? r.name ?? "?",
    summary: r.summary ?? r.description ?? r.displayName ?? "",
    version: r.version ?? r.latestVersion?.version ?? "",
  }));
}

export function listInstalled(workdir) {
  const dir = join(resolve(workdir), "skills");
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && !e.name.startsWith(".") && existsSync(join(dir, e.name, "SKILL.md")))
    .map((e) => ({ name: e.name, description: descriptionOf(readFileSync(join(dir, e.name, "SKILL.md"), "utf8")) }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

async function main(argv) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      registry: { type: "string" },
      workdir: { type: "string" },
      limit: { type: "string" },
      version: { type: "string" },
      force: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [command, ...rest] = positionals;
  if (values.help || !command) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  const registry = values.registry ?? process.env.CLAWHUB_REGISTRY ?? DEFAULT_REGISTRY;
  const workdir = values.workdir ?? process.cwd();
  if (command === "search") {
    if (!rest.length) throw new UsageError("search needs some words: node clawhub.mjs search <words>");
    const limit = Number(values.limit ?? 10);
    if (!Number.isInteger(limit) || limit < 1) throw new UsageError(`--limit takes a whole number, not "${values.limit}"`);
    const found = await search(rest.join(" "), { registry, limit });
    if (!found.length) console.log(`nothing found for "${rest.join(" ")}" on ${registry}`);
    for (const r of found) console.log(`${r.slug}${r.version ? ` (${r.version})` : ""}  ${r.summary}`);
    return 0;
  }
  if (command === "install") {
    if (rest.length !== 1) throw new UsageError("install takes one slug or URL: node clawhub.mjs install <slug>");
    const { dest, files, description } = await install(rest[0], { registry, workdir, version: values.version, force: values.force });
    console.log(`installed ${dest} (${files.length} file${files.length === 1 ? "" : "s"})${description ? `: ${description}` : ""}`);
    console.log("it is available from the next message on");
    return 0;
  }
  if (command === "list") {
    const skills = listInstalled(workdir);
    if (!skills.length) console.log(`no skills in ${join(resolve(workdir), "skills")}`);
    for (const s of skills) console.log(`${s.name}  ${s.description}`);
    return 0;
  }
  throw new UsageError(`unknown command "${command}"; use search, install or list`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      const usage = err instanceof UsageError || err.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" || err.code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE";
      console.error(`error: ${err.message}${usage ? "\n\n" + USAGE : ""}`);
      process.exit(usage ? 2 : 1);
    },
  );
}
