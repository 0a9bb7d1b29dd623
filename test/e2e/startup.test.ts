import { spawn } from "node:child_process";
import { copyFile, mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { TROUPE_BIN } from "../helpers/cli.js";
import { writeHome } from "../helpers/daemon.js";
import { startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { stdioFixture } from "../helpers/mcp.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { closeAfterEach } from "../helpers/teardown.js";

const TRACE = fileURLToPath(new URL("../fixtures/module-trace.mjs", import.meta.url));
const PACKAGE = JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };

/** Runs the built CLI with the module trace preloaded; returns its output and every module it loaded. */
async function modulesLoaded(args: string[], home: string): Promise<{ code: number | null; stdout: string; stderr: string; modules: string[] }> {
  const trace = join(home, `modules-${Date.now()}-${Math.random().toString(36).slice(2)}.txt`);
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("TROUPE_")));
  const child = spawn(process.execPath, ["--import", TRACE, TROUPE_BIN, ...args], { env: { ...clean, TROUPE_HOME: home, MODULE_TRACE: trace }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  const modules = [...new Set((await readFile(trace, "utf8")).split("\n").filter(Boolean))];
  return { code, stdout, stderr, modules };
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
    expect(list.modules.some((m) => m.includes("/dist/main.js"))).toBe(true);
    expect(heavyIn(list.modules)).toEqual([]);
  });

  it("a cold agent -m hello loads no MCP SDK, git, Telegram, tokenizer or document readers; a large input loads the tokenizer", async () => {
    fake = await startFakeOpenAi([{ content: "hi there" }, { content: "read it" }]);
    const home = await tempDir();
    await writeHome(home, fake.url, { defaults: { contextWindowTokens: 40_000, maxTokens: 1_000 } });
    const cold = await modulesLoaded(["agent", "-m", "hello"], home);
    expect(cold.code, cold.stderr).toBe(0);
    expect(cold.stdout).toContain("hi there");
    expect(heavyIn(cold.modules)).toEqual([]);
    // The store is what a turn needs: it is there.
    expect(loadedPackages(cold.modules).has("classic-level")).toBe(true);
    // The model is called over node:http: neither the openai SDK nor undici (global fetch) is loaded.
    expect(cold.modules.some((m) => m === "builtin:http")).toBe(true);
    expect(cold.modules.filter((m) => /\/dist\/openai-[^/]+\.js$/.test(m) || m.includes("undici"))).toEqual([]);
    // ~60 KB of text: its byte count no longer fits the budget, so the tokenizer counts it exactly.
    const big = await modulesLoaded(["agent", "-m", `summarise: ${"lorem ipsum dolor sit amet ".repeat(2_300)}`], home);
    expect(big.code, big.stderr).toBe(0);
    expect(big.stdout).toContain("read it");
    expect(loadedPackages(big.modules).has("gpt-tokenizer")).toBe(true);
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
    expect(r.modules.filter((m) => /\/dist\/(openai|agent-local)-[^/]+\.js$/.test(m))).toEqual([]);
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
