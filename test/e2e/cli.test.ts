import { chmod, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { runCli, TROUPE_BIN } from "../helpers/cli.js";
import { useTempDirs } from "../helpers/tmp.js";

describe("troupe CLI", () => {
  const tempDir = useTempDirs();

  it("prints its version and help", async () => {
    const home = await tempDir();
    const pkg = JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
    expect((await runCli(["--version"], { TROUPE_HOME: home })).stdout.trim()).toBe(pkg.version);
    const help = await runCli(["--help"], { TROUPE_HOME: home });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("onboard");
    expect(help.stdout).toContain("status");
  });

  it("exits quietly when the reader of its output goes away (troupe … | head)", async () => {
    const dir = await tempDir();
    const child = spawn(process.execPath, [TROUPE_BIN, "daemon", "install-service", "--dry-run"], { env: { ...process.env, TROUPE_HOME: dir } });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.stdout.once("data", () => child.stdout.destroy());
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect(stderr).not.toContain("EPIPE");
    expect(code).toBe(0);
  });

  it("onboard creates config and workspace once; a second run changes nothing", async () => {
    const home = await tempDir();
    const first = await runCli(["onboard"], { TROUPE_HOME: home });
    expect(first.code).toBe(0);
    for (const f of ["AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md", "HEARTBEAT.md", "memory/MEMORY.md"]) {
      expect(first.stdout).toContain(`+ ${f}`);
    }
    expect((await readdir(home)).sort()).toEqual(["config.json", "logs", "media", "workspace"]);
    await writeFile(join(home, "workspace", "SOUL.md"), "mine");
    const configBefore = await readFile(join(home, "config.json"), "utf8");
    const second = await runCli(["onboard"], { TROUPE_HOME: home });
    expect(second.code).toBe(0);
    expect(second.stdout).toContain("0 file(s) created, 6 kept");
    expect(await readFile(join(home, "workspace", "SOUL.md"), "utf8")).toBe("mine");
    expect(await readFile(join(home, "config.json"), "utf8")).toBe(configBefore);
  });

  it("onboard writes config.json private and warns about a config or data dir open to others; a __proto__ key is a config error", async () => {
    const home = await tempDir();
    const first = await runCli(["onboard"], { TROUPE_HOME: home });
    expect(first.stderr).toBe("");
    expect((await stat(join(home, "config.json"))).mode & 0o777).toBe(0o600);
    await chmod(join(home, "config.json"), 0o644);
    const second = await runCli(["onboard"], { TROUPE_HOME: home });
    expect(second.code).toBe(0);
    expect(second.stderr).toBe(`warning: ${join(home, "config.json")} (API keys, tokens) is open to other users (mode 644); run: chmod 600 ${join(home, "config.json")}\n`);
    await writeFile(join(home, "config.json"), '{"agents": {"defaults": {"__proto__": {"model": "x"}}}}');
    const bad = await runCli(["status"], { TROUPE_HOME: home });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(`config error in ${join(home, "config.json")}: agents.defaults.__proto__: a key named __proto__ is not allowed (it could change how every object behaves); remove it\n`);
  });

  it("status shows which providers have keys without printing a key", async () => {
    const home = await tempDir();
    await writeFile(join(home, "config.json"), JSON.stringify({ providers: { openai: { apiKey: "sk-secret-value-1234" }, groq: {} } }));
    const r = await runCli(["status"], { TROUPE_HOME: home });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("openai (key set)");
    expect(r.stdout).toContain("groq (no key)");
    expect(r.stdout).toContain("provider:  auto → openai at https://api.openai.com/v1 (model sent as gpt-4o-mini)");
    expect(r.stdout).toContain(`store:     ${join(home, "store")}`);
    expect(r.stdout + r.stderr).not.toContain("sk-secret-value-1234");
  });

  it("an invalid config stops the command with exit 2 and one line per problem, no stack", async () => {
    const home = await tempDir();
    await writeFile(join(home, "config.json"), JSON.stringify({ agents: { defaults: { max_tokens: "x" } }, gateway: { port: -1 }, typo: 1 }));
    const r = await runCli(["status"], { TROUPE_HOME: home });
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^config error in .*config\.json: agents\.defaults\.maxTokens: /);
    expect(lines[1]).toMatch(/^config error in .*config\.json: gateway\.port: /);
    expect(r.stderr).not.toMatch(/\bat .*\.ts:\d+/);
  });
});
