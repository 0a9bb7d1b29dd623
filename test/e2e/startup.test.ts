import { spawn } from "node:child_process";
import { appendFile, copyFile, mkdir, readFile, readdir, symlink, writeFile } from "node:fs/promises";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { TROUPE_BIN } from "../helpers/cli.js";
import { writeHome } from "../helpers/daemon.js";
import { startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { stdioFixture } from "../helpers/mcp.js";
import { selfSignedCert } from "../helpers/tls.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { closeAfterEach } from "../helpers/teardown.js";

const TRACE = fileURLToPath(new URL("../fixtures/module-trace.mjs", import.meta.url));
const FLAG_TRACE = fileURLToPath(new URL("../fixtures/flag-trace.mjs", import.meta.url));
const PACKAGE = JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };

/** Runs the built CLI with the module trace preloaded; returns its output and every module it loaded. */
async function modulesLoaded(args: string[], home: string, bin = TROUPE_BIN, env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string; modules: string[] }> {
  const trace = join(home, `modules-${Date.now()}-${Math.random().toString(36).slice(2)}.txt`);
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("TROUPE_")));
  const child = spawn(process.execPath, ["--import", TRACE, bin, ...args], { env: { ...clean, ...env, TROUPE_HOME: home, MODULE_TRACE: trace }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  const modules = [...new Set((await readFile(trace, "utf8")).split("\n").filter(Boolean))];
  return { code, stdout, stderr, modules };
}

/** Runs node with `args` to its end. */
async function runNode(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { code, stdout, stderr };
}

/** A copy of the package in `dir` (bin/, the built bundle; node_modules and templates linked), so a test's code caches are its own. */
async function packageCopy(dir: string): Promise<string> {
  const root = fileURLToPath(new URL("../../", import.meta.url));
  await mkdir(join(dir, "bin"));
  await mkdir(join(dir, "dist"));
  for (const f of ["bin/troupe.js", "bin/package.json", "dist/troupe.cjs", "package.json"]) await copyFile(join(root, f), join(dir, f));
  for (const d of ["node_modules", "templates"]) await symlink(join(root, d), join(dir, d));
  return dir;
}

/** Packages a command must not load unless it uses them (a one-shot turn with no MCP server, no Telegram, a small input). */
const HEAVY = ["@modelcontextprotocol", "ajv", "isomorphic-git", "pako", "grammy", "gpt-tokenizer", "linkedom", "mammoth", "unpdf", "fflate", "turndown", "@mozilla", "pino-pretty", "tsx"];
const loadedPackages = (modules: string[]) =>
  new Set(modules.flatMap((m) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(m)?.[1] ?? []));
const heavyIn = (modules: string[]) => HEAVY.filter((p) => loadedPackages(modules).has(p) || (p === "tsx" && modules.some((m) => m.endsWith(".ts"))));

describe("start-up: what each command loads", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let gateway: GatewayProcess | undefined;
  closeAfterEach(() => [gateway, fake]);

  it("--version answers from package.json without loading the CLI", async () => {
    const home = await tempDir();
    const version = await modulesLoaded(["--version"], home);
    expect(version.code).toBe(0);
    expect(version.stdout).toBe(`${PACKAGE.version}\n`);
    expect(version.modules.filter((m) => m.includes("/dist/"))).toEqual([]);
    expect(version.modules.filter((m) => m.includes("node_modules"))).toEqual([]);
    // -v too, and --version after a command is still commander's (the whole CLI).
    expect((await modulesLoaded(["-v"], home)).stdout).toBe(`${PACKAGE.version}\n`);
  });

  it("sessions list runs compiled JavaScript and loads none of the heavy packages", async () => {
    const home = await tempDir();
    const list = await modulesLoaded(["sessions", "list"], home);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain("no sessions");
    expect(list.modules.some((m) => m.endsWith("/dist/troupe.cjs"))).toBe(true);
    expect(heavyIn(list.modules)).toEqual([]);
  });

  it("a cold agent -m hello loads no MCP SDK, git, Telegram, tokenizer or document readers; a large input loads the tokenizer", async () => {
    fake = await startFakeOpenAi([{ content: "hi there" }, { content: "read it" }, { content: "with yaml" }]);
    const home = await tempDir();
    await writeHome(home, fake.url, { defaults: { contextWindowTokens: 40_000, maxTokens: 1_000 } });
    // The store would be lent 100 ms in: on a loaded machine the traced turn may take longer, so the wait is made long.
    const cold = await modulesLoaded(["agent", "-m", "hello"], home, TROUPE_BIN, { TROUPE_LEND_AFTER_MS: "60000" });
    expect(cold.code, cold.stderr).toBe(0);
    expect(cold.stdout).toContain("hi there");
    expect(heavyIn(cold.modules)).toEqual([]);
    // The store is what a turn needs: it is there. Its native binding is loaded from where the build
    // found it, without node-gyp-build (compiled at every start, and its search of classic-level's folders).
    expect(loadedPackages(cold.modules).has("classic-level")).toBe(true);
    expect(cold.modules.filter((m) => m.includes("node_modules/classic-level/") && m.endsWith(".node"))).toHaveLength(1);
    expect(loadedPackages(cold.modules).has("node-gyp-build")).toBe(false);
    // The model is called over node:http: undici (global fetch) is not loaded.
    expect(cold.modules.some((m) => m === "builtin:http")).toBe(true);
    expect(cold.modules.filter((m) => m.includes("undici"))).toEqual([]);
    // Nor built-ins only some turns use, loaded when used: https/tls (a provider or a page over https://),
    // zlib (a compressed reply), readline (the interactive prompt), child_process and dns (with
    // node:cluster, which net loads at the first listen: a turn answered before the store is lent never listens).
    expect(cold.modules.filter((m) => /^builtin:(https|tls|zlib|readline|child_process|dns|cluster)$/.test(m))).toEqual([]);
    // The built-in skills' frontmatter is plain `key: value` lines: the YAML parser is not loaded.
    expect(loadedPackages(cold.modules).has("yaml")).toBe(false);
    // ~60 KB of text: its byte count no longer fits the budget, so the tokenizer counts it exactly.
    const big = await modulesLoaded(["agent", "-m", `summarise: ${"lorem ipsum dolor sit amet ".repeat(2_300)}`], home);
    expect(big.code, big.stderr).toBe(0);
    expect(big.stdout).toContain("read it");
    expect(loadedPackages(big.modules).has("gpt-tokenizer")).toBe(true);
    // A skill whose frontmatter needs YAML (a folded description): the parser is loaded from node_modules, and reads it.
    await mkdir(join(home, "workspace", "skills", "folded"), { recursive: true });
    await writeFile(join(home, "workspace", "skills", "folded", "SKILL.md"), "---\nname: folded\ndescription: >\n  Folded over\n  two lines.\n---\nbody\n");
    const yaml = await modulesLoaded(["agent", "-m", "hello again"], home);
    expect(yaml.code, yaml.stderr).toBe(0);
    expect(yaml.stdout).toContain("with yaml");
    expect(loadedPackages(yaml.modules).has("yaml")).toBe(true);
    expect(String(fake.requests.at(-1)?.body.messages[0]?.content)).toContain("- **folded** — Folded over two lines.");
  });

  it("finds LevelDB's binding through node-gyp-build when it is not where the build found it", async () => {
    // node_modules rearranged since the build (or another platform's install): the path the bundle holds leads nowhere.
    const pkg = await packageCopy(await tempDir());
    const bundle = join(pkg, "dist", "troupe.cjs");
    const source = await readFile(bundle, "latin1");
    const recorded = /"([^"]*classic-level[^"]*\.node)"/.exec(source)?.[1];
    expect(recorded).toBeDefined();
    await writeFile(bundle, source.replace(recorded!, "../gone/classic-level.node"), "latin1");
    fake = await startFakeOpenAi([{ content: "still here" }]);
    const home = await tempDir();
    await writeHome(home, fake.url);
    const r = await modulesLoaded(["agent", "-m", "hello"], home, join(pkg, "bin", "troupe.js"));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("still here");
    expect(loadedPackages(r.modules).has("node-gyp-build")).toBe(true);
  });

  it("loads the MCP SDK when an MCP server is configured", async () => {
    fake = await startFakeOpenAi([{ content: "with tools" }]);
    const home = await tempDir();
    await writeHome(home, fake.url, { config: { tools: { mcpServers: { fx: stdioFixture(join(home, "mcp.log")) } } } });
    const r = await modulesLoaded(["agent", "-m", "hello"], home);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("with tools");
    expect(loadedPackages(r.modules).has("@modelcontextprotocol/sdk")).toBe(true);
  });

  it("agent -m through a running daemon loads neither the runtime nor any package: it only talks to the daemon", async () => {
    fake = await startFakeOpenAi([{ content: "from the daemon" }]);
    const home = await tempDir();
    await writeHome(home, fake.url, { config: { gateway: { port: 0 } } });
    gateway = await startGateway(home);
    const r = await modulesLoaded(["agent", "-m", "hello"], home);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("from the daemon");
    expect(fake.requests).toHaveLength(1);
    expect(r.modules.filter((m) => m.includes("node_modules"))).toEqual([]);
    // Nor Node's fetch (undici), nor built-ins only the runtime uses (child processes: exec, commander's
    // executable subcommands; zlib). (worker_threads is the module trace's own hooks thread.)
    expect(r.modules.filter((m) => /^builtin:(internal\/deps\/undici|child_process|zlib)$/.test(m))).toEqual([]);
    // Nor crypto (the message's idempotency key is made without it), readline (the interactive prompt's)
    // or v8 (bin/troupe.js sets no V8 flags for a client of the daemon).
    expect(r.modules.filter((m) => /^builtin:(crypto|readline|v8)$/.test(m))).toEqual([]);
  });

  it("keeps a V8 code cache beside the bundle: written by the first run, used by the next, rebuilt when refused or stale", async () => {
    const pkg = await packageCopy(await tempDir());
    const home = await tempDir();
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("TROUPE_")));
    const run = (nodeArgs: string[] = [], command = ["sessions", "list"]) =>
      new Promise<{ code: number | null; stdout: string; cache: string }>((resolve) => {
        const child = spawn(process.execPath, [...nodeArgs, join(pkg, "bin", "troupe.js"), ...command], {
          env: { ...clean, TROUPE_HOME: home, TROUPE_CODE_CACHE_DEBUG: "1" },
          stdio: ["ignore", "pipe", "pipe"],
        });
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
        child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
        child.on("close", (code) => resolve({ code, stdout, cache: /^code cache (\w+)$/.exec(stderr.trim())?.[1] ?? stderr }));
      });
    const caches = async () => (await readdir(join(pkg, "dist"))).filter((f) => f.endsWith(".cache")).sort();

    const first = await run();
    expect(first).toMatchObject({ code: 0, cache: "missing" });
    expect(first.stdout).toContain("no sessions");
    expect(await caches()).toEqual(["troupe.cjs.sessions.cache"]);
    expect(await run()).toMatchObject({ code: 0, cache: "used" });
    // Each command has its own (it holds what that command compiled).
    expect(await run([], ["cron", "list"])).toMatchObject({ code: 0, cache: "missing" });
    expect(await caches()).toEqual(["troupe.cjs.cron.cache", "troupe.cjs.sessions.cache"]);
    // A run that fails, or only prints help, writes no cache for the command: it compiled little of it,
    // and a cache V8 accepts is kept until the next build.
    expect((await run([], ["frobnicate"])).code).not.toBe(0);
    expect((await run([], ["agent", "--help"])).code).toBe(0);
    expect((await run([], ["agent", "-m", "hi", "--model", "x/y"])).code).not.toBe(0);
    expect(await caches()).toEqual(["troupe.cjs.cron.cache", "troupe.cjs.help.cache", "troupe.cjs.sessions.cache"]);
    // Damaged (its data, not its first line): refused by V8, the run still answers, and the cache is rewritten.
    const file = join(pkg, "dist", "troupe.cjs.sessions.cache");
    const bytes = await readFile(file);
    const nl = bytes.indexOf(10);
    bytes.fill(7, nl + 1 + 16, nl + 1 + 64);
    await writeFile(file, bytes);
    expect(await run()).toMatchObject({ code: 0, cache: "refused" });
    expect(await run()).toMatchObject({ code: 0, cache: "used" });
    // A rebuilt bundle (same length or not): the cache made for the old one is not offered.
    await appendFile(join(pkg, "dist", "troupe.cjs"), "\n// rebuilt\n");
    const rebuilt = await run();
    expect(rebuilt).toMatchObject({ code: 0, cache: "missing" });
    expect(rebuilt.stdout).toContain("no sessions");
    expect(await run()).toMatchObject({ code: 0, cache: "used" });
    // import() from code that came from the cache (a hook module): V8 drops Node's callback for it, so the bundle uses bin/troupe.js's.
    fake = await startFakeOpenAi([{ content: "first" }, { content: "second" }]);
    await writeHome(home, fake.url);
    await mkdir(join(home, "workspace", "hooks"), { recursive: true });
    await writeFile(join(home, "workspace", "hooks", "sign.mjs"), 'export default { finalizeContent: (ctx, content) => content + " (signed)" };\n');
    const hooked = await run([], ["agent", "-m", "hello"]);
    expect(hooked).toMatchObject({ code: 0, cache: "missing" });
    expect(hooked.stdout).toContain("first (signed)");
    const cachedHooked = await run([], ["agent", "-m", "hello"]);
    expect(cachedHooked).toMatchObject({ code: 0, cache: "used" });
    expect(cachedHooked.stdout).toContain("second (signed)");
    // "gateway" as a message is not the gateway command: the agent's cache and flags.
    fake.push({ content: "third" });
    expect(await run([], ["agent", "-m", "gateway"])).toMatchObject({ code: 0, cache: "used" });
    // Other V8 flags: V8 would refuse it; it is not offered, and the run writes one for its own flags.
    expect(await run(["--max-semi-space-size=2"])).toMatchObject({ code: 0, cache: "missing" });
    expect(await run(["--max-semi-space-size=2"])).toMatchObject({ code: 0, cache: "used" });
  });

  it("loads the built-ins a command used, as its code cache recorded them, before it changes V8's flags", async () => {
    // A V8 flag change makes V8 refuse the code cache Node ships for its own modules: node:http,
    // node:crypto... loaded after it are compiled from source (~3x the time).
    const pkg = await packageCopy(await tempDir());
    fake = await startFakeOpenAi([{ content: "first" }, { content: "second" }]);
    const home = await tempDir();
    await writeHome(home, fake.url);
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("TROUPE_")));
    const run = async () => {
      const trace = join(home, `flags-${Date.now()}-${Math.random().toString(36).slice(2)}.txt`);
      const child = spawn(process.execPath, ["--import", FLAG_TRACE, join(pkg, "bin", "troupe.js"), "agent", "-m", "hello"], {
        env: { ...clean, TROUPE_HOME: home, FLAG_TRACE: trace, TROUPE_CODE_CACHE_DEBUG: "1" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
      child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
      return { code, stdout, stderr, lateBuiltins: (await readFile(trace, "utf8")).split("\n").filter(Boolean) };
    };
    // The first run has no cache: it learns which built-ins the command loads (http for the model, crypto...).
    const first = await run();
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain("code cache missing");
    expect(first.lateBuiltins).toEqual(expect.arrayContaining(["http", "crypto", "fs/promises"]));
    const next = await run();
    expect(next.code, next.stderr).toBe(0);
    expect(next.stdout).toContain("second");
    expect(next.stderr).toContain("code cache used");
    expect(next.lateBuiltins).toEqual([]);
  });

  it("an https provider answers on every run, also those that load the built-ins their code cache recorded", async () => {
    // The cache recorded Node's internal _tls_common and _tls_wrap before tls; loaded ahead in that
    // order, tls came out half built: every https request of the next runs failed with
    // "tls.createSecureContext is not a function".
    const { key, cert, certFile } = await selfSignedCert(await tempDir());
    let answered = 0;
    const server = createHttpsServer({ key, cert }, (req, res) => {
      req.resume();
      req.on("end", () => {
        const delta = { role: "assistant", content: `over https ${++answered}` };
        const chunk = (body: object) => `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", created: 0, model: "m", ...body })}\n\n`;
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.end(chunk({ choices: [{ index: 0, delta, finish_reason: null }] }) + chunk({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }) + "data: [DONE]\n\n");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const pkg = await packageCopy(await tempDir());
      const home = await tempDir();
      await writeHome(home, `https://127.0.0.1:${(server.address() as AddressInfo).port}/v1`);
      const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("TROUPE_")));
      for (const [i, cache] of [[1, "missing"], [2, "used"], [3, "used"]] as const) {
        const r = await runNode([join(pkg, "bin", "troupe.js"), "agent", "-m", "hello"], { ...clean, TROUPE_HOME: home, NODE_EXTRA_CA_CERTS: certFile, TROUPE_CODE_CACHE_DEBUG: "1" });
        expect(r.stderr, `run ${i}`).toContain(`code cache ${cache}`);
        expect(r.stdout, `run ${i}: ${r.stderr}`).toContain(`over https ${i}`);
        expect(r.code, `run ${i}`).toBe(0);
      }
    } finally {
      server.close();
      server.closeAllConnections();
    }
  });

  it("says to build when dist/ is missing", async () => {
    const dir = await tempDir();
    await mkdir(join(dir, "bin"));
    await copyFile(TROUPE_BIN, join(dir, "bin", "troupe.js"));
    const r = spawn(process.execPath, [join(dir, "bin", "troupe.js"), "status"], { stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    r.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    expect(await new Promise((resolve) => r.on("close", resolve))).toBe(1);
    expect(stderr).toContain("run npm run build");
  });
});
