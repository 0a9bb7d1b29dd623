import { chmod, mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { spawn, spawnSync } from "node:child_process";
import { runCli, TROUPE_BIN } from "../helpers/cli.js";
import { startGateway } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { writeConfig } from "../helpers/daemon.js";

/** Runs a bash completion script for a command line as typed so far (the last word is being completed). */
function complete(script: string, line: string[]): string[] {
  const words = line.map((w) => `'${w}'`).join(" ");
  const r = spawnSync("bash", ["-c", `${script}\nCOMP_WORDS=(${words}); COMP_CWORD=${line.length - 1}; _troupe; printf '%s\\n' "\${COMPREPLY[@]}"`], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(r.stderr);
  return r.stdout.split("\n").filter(Boolean).sort();
}

/** The command names a `--help` lists. */
const helpCommands = (help: string) => {
  const section = help.slice(help.indexOf("Commands:")).split("\n\n")[0]!;
  return [...section.matchAll(/^ {2}([a-z][\w-]*)/gm)].map((m) => m[1]!).filter((c) => c !== "help");
};

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

  it("an agent line is read as before though it defines the agent command alone: its help, its errors, and every command's help after another option", async () => {
    const home = await tempDir();
    const all = helpCommands((await runCli(["--help"], { TROUPE_HOME: home })).stdout);
    expect(all.length).toBeGreaterThan(10);
    const agentHelp = await runCli(["-w", home, "agent", "--help"], { TROUPE_HOME: home });
    expect(agentHelp.code).toBe(0);
    expect(agentHelp.stdout).toMatch(/^Usage: troupe agent \[options\]/);
    const extra = await runCli(["--config", join(home, "config.json"), "agent", "-m", "hi", "extra"], { TROUPE_HOME: home });
    expect(extra.code).toBe(1);
    expect(extra.stderr).toMatch(/^error: too many arguments for 'agent'\. Expected 0 arguments but got 1\.\n\nUsage: troupe agent \[options\]/);
    // An option the program does not know, before the command: the program's help, with every command.
    const stray = await runCli(["--bogus", "agent", "-m", "hi"], { TROUPE_HOME: home });
    expect(stray.code).toBe(1);
    expect(stray.stderr).toContain("error: unknown option '--bogus'");
    expect(helpCommands(stray.stderr)).toEqual(all);
    // A mistyped command is offered the right one.
    expect((await runCli(["agen", "-m", "hi"], { TROUPE_HOME: home })).stderr).toContain("(Did you mean agent?)");
  });

  it("--help gives examples, the data dir, the environment overrides and TROUPE_LOG_LEVEL", async () => {
    const home = await tempDir();
    const help = await runCli(["--help"], { TROUPE_HOME: home });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Examples:");
    expect(help.stdout).toMatch(/troupe agent -m "/);
    expect(help.stdout).toContain(`Data dir: ${home}`);
    expect(help.stdout).toMatch(/TROUPE_HOME +/);
    expect(help.stdout).toMatch(/TROUPE_PROVIDERS__OPENAI__API_KEY=/);
    expect(help.stdout).toMatch(/TROUPE_LOG_LEVEL +.*debug/);
    for (const command of ["doctor", "completion"]) expect(helpCommands(help.stdout)).toContain(command);
  });

  it("completion bash completes the program's commands, subcommands and options; zsh gets a compdef script", async () => {
    const home = await tempDir();
    const bash = await runCli(["completion", "bash"], { TROUPE_HOME: home });
    expect(bash.code).toBe(0);
    const script = bash.stdout;
    expect(script).toContain("complete -F _troupe troupe");
    // Every command --help lists, and every subcommand of daemon and sessions, is offered.
    const top = complete(script, ["troupe", ""]);
    expect(helpCommands((await runCli(["--help"], { TROUPE_HOME: home })).stdout).every((c) => top.includes(c))).toBe(true);
    const daemonHelp = helpCommands((await runCli(["daemon", "--help"], { TROUPE_HOME: home })).stdout);
    expect(complete(script, ["troupe", "daemon", ""])).toEqual(expect.arrayContaining(daemonHelp));
    expect(complete(script, ["troupe", "daemon", "st"])).toEqual(["start", "status", "stop"]);
    expect(complete(script, ["troupe", "sessions", ""])).toEqual(expect.arrayContaining(["delete", "list", "show"]));
    expect(complete(script, ["troupe", "agent", "--"])).toEqual(expect.arrayContaining(["--message", "--session", "--help"]));
    // A value is not taken for a command: `-s KEY` is followed by agent's options again.
    expect(complete(script, ["troupe", "agent", "-s", "cli:x", "--m"])).toEqual(["--message"]);
    expect(complete(script, ["troupe", "sessions", "show", "--"])).toEqual(expect.arrayContaining(["--all"]));
    expect(complete(script, ["troupe", "completion", ""])).toEqual(["bash", "zsh"]);

    const zsh = await runCli(["completion", "zsh"], { TROUPE_HOME: home });
    expect(zsh.code).toBe(0);
    expect(zsh.stdout.startsWith("#compdef troupe")).toBe(true);
    for (const c of [...top.filter((w) => !w.startsWith("-")), ...daemonHelp]) expect(zsh.stdout).toContain(`'${c}:`);
    if (spawnSync("zsh", ["--version"]).status === 0) {
      expect(spawnSync("zsh", ["-n"], { input: zsh.stdout }).status).toBe(0);
      // What _troupe hands to _describe for a line typed so far (compdef and _describe stubbed: no interactive shell here).
      const offered = (words: string[], prefix = "") =>
        spawnSync("zsh", ["-c", `compdef(){}; _describe(){ print -rl -- \${(P)\${@[-1]}} | cut -d: -f1 }; ${zsh.stdout}\nwords=(${words.map((w) => `'${w}'`).join(" ")}); CURRENT=${words.length}; PREFIX='${prefix}'; _troupe`], { encoding: "utf8" })
          .stdout.split("\n").filter(Boolean).sort();
      expect(offered(["troupe", "daemon", ""])).toEqual([...daemonHelp, "help"].sort());
      expect(offered(["troupe", "agent", "-s", "cli:x", "--"], "--")).toEqual(expect.arrayContaining(["--message", "--session"]));
    }

    const fish = await runCli(["completion", "fish"], { TROUPE_HOME: home });
    expect(fish.code).not.toBe(0);
    expect(fish.stderr).toMatch(/bash, zsh/);
  });

  it("the README's Commands table names every command the program has", async () => {
    const home = await tempDir();
    const readme = await readFile(new URL("../../README.md", import.meta.url), "utf8");
    const table = readme.slice(readme.indexOf("## Commands"), readme.indexOf("\n## ", readme.indexOf("## Commands") + 5));
    for (const c of helpCommands((await runCli(["--help"], { TROUPE_HOME: home })).stdout)) expect(table, c).toContain(`\`troupe ${c}`);
    for (const group of ["daemon", "sessions", "cron"]) {
      const rows = table.split("\n").filter((l) => l.startsWith(`| \`troupe ${group}`));
      for (const sub of helpCommands((await runCli([group, "--help"], { TROUPE_HOME: home })).stdout)) {
        expect(rows.some((r) => new RegExp(`\\b${sub}\\b`).test(r)), `${group} ${sub}`).toBe(true);
      }
    }
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
    for (const f of ["AGENTS.md", "SOUL.md", "USER.md", "HEARTBEAT.md", "memory/MEMORY.md", "memory/history.jsonl"]) {
      expect(first.stdout).toContain(`+ ${f}`);
    }
    expect((await readdir(home)).sort()).toEqual(["config.json", "logs", "media", "workspace"]);
    // Without a terminal: defaults, mode 600 (keys go in it), and one line saying what to set.
    expect((await stat(join(home, "config.json"))).mode & 0o777).toBe(0o600);
    const next = first.stdout.split("\n").filter((l) => l.startsWith("next:"));
    expect(next).toHaveLength(1);
    expect(next[0]).toMatch(/TROUPE_PROVIDERS__OPENAI__API_KEY=.*providers\.openai\.apiKey/);
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
    await writeConfig(home, { providers: { openai: { apiKey: "sk-secret-value-1234" }, groq: {} } });
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
    await writeConfig(home, { agents: { defaults: { max_tokens: "x" } }, gateway: { port: -1 }, typo: 1 });
    const r = await runCli(["status"], { TROUPE_HOME: home });
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^config error in .*config\.json: agents\.defaults\.maxTokens: /);
    expect(lines[1]).toMatch(/^config error in .*config\.json: gateway\.port: /);
    expect(r.stderr).not.toMatch(/\bat .*\.ts:\d+/);
  });

  it("install-service writes an EnvironmentFile for the variables the config interpolates, and names the unit after the data dir", async () => {
    const fakeHome = await tempDir();
    const home = await tempDir();
    const other = await tempDir();
    // No systemd user session here: a systemctl that fails, first on PATH.
    const bin = join(fakeHome, "bin");
    await mkdir(bin);
    await writeFile(join(bin, "systemctl"), "#!/bin/sh\necho 'Failed to connect to bus' >&2\nexit 1\n");
    await chmod(join(bin, "systemctl"), 0o755);
    const config = { providers: { openai: { apiKey: "${MY_OPENAI_KEY}" } }, channels: { telegram: { token: "${TG_TOKEN}" } } };
    await writeConfig(home, config);
    const env = { TROUPE_HOME: home, HOME: fakeHome, PATH: `${bin}:${process.env.PATH}`, MY_OPENAI_KEY: "sk-secret-42" };

    // TG_TOKEN is unset in this shell, so the config does not load; install-service needs only its variable names.
    const dry = await runCli(["daemon", "install-service", "--dry-run"], env);
    expect(dry.stderr).toBe("");
    expect(dry.code).toBe(0);
    const unitName = /would write .*\/(troupe-[\w-]+\.service)/.exec(dry.stdout)?.[1];
    expect(unitName).toBeDefined();
    expect(dry.stdout).toContain(`EnvironmentFile=${join(home, "service.env")}`);
    expect(dry.stdout).toMatch(/MY_OPENAI_KEY: set/);
    expect(dry.stdout).toMatch(/TG_TOKEN: not set/);
    expect(dry.stdout).not.toContain("sk-secret-42");
    const otherDry = await runCli(["daemon", "install-service", "--dry-run"], { ...env, TROUPE_HOME: other });
    expect(otherDry.stdout).not.toContain(unitName);

    const real = await runCli(["daemon", "install-service"], env);
    expect(real.code).toBe(1);
    expect(real.stdout).toContain(`systemctl --user enable --now ${unitName}`);
    const unit = await readFile(join(fakeHome, ".config", "systemd", "user", unitName!), "utf8");
    expect(unit).toContain(`EnvironmentFile=${join(home, "service.env")}`);
    expect(unit).toContain(`Environment=TROUPE_HOME=${home}`);
    const envFile = join(home, "service.env");
    expect((await stat(envFile)).mode & 0o777).toBe(0o600);
    const text = await readFile(envFile, "utf8");
    expect(text).toMatch(/^MY_OPENAI_KEY="sk-secret-42"$/m);
    expect(text).toMatch(/^# TG_TOKEN=/m);
    expect(real.stdout).toMatch(/TG_TOKEN is not set: add it to .*service\.env/);

    const un = await runCli(["daemon", "uninstall-service", "--dry-run"], env);
    expect(un.stdout).toContain(`systemctl --user disable --now ${unitName}`);
  });

  it("gateway warns when gateway.host is not a loopback address, and not when it is", async () => {
    const home = await tempDir();
    const config = (host: string) => JSON.stringify({ agents: { defaults: { provider: "custom", model: "m" } }, providers: { custom: { apiBase: "http://127.0.0.1:9/v1" } }, gateway: { host, port: 0 } });
    await writeFile(join(home, "config.json"), config("0.0.0.0"));
    const open = await startGateway(home);
    open.proc.kill("SIGTERM");
    await open.exited;
    expect(open.output()).toMatch(/warning: gateway\.host is 0\.0\.0\.0, not a loopback address: the control API is reachable from other machines/);
    await writeFile(join(home, "config.json"), config("127.0.0.1"));
    const local = await startGateway(home);
    local.proc.kill("SIGTERM");
    await local.exited;
    expect(local.output()).not.toContain("warning: gateway.host");
  });

  it("daemon logs reads on into rotated files and follows the log across a rotation", async () => {
    const home = await tempDir();
    const logs = join(home, "logs");
    await mkdir(logs);
    const entry = (msg: string) => `${JSON.stringify({ level: 30, time: 0, msg })}\n`;
    await writeFile(join(logs, "troupe.log.2"), entry("oldest"));
    await writeFile(join(logs, "troupe.log.1"), entry("older one") + entry("older two"));
    await writeFile(join(logs, "troupe.log"), entry("newest"));
    const r = await runCli(["daemon", "logs", "-n", "3"], { TROUPE_HOME: home });
    expect(r.code).toBe(0);
    const shown = r.stdout.split("\n").filter(Boolean);
    expect(shown).toHaveLength(3);
    expect(shown[0]).toContain("older one");
    expect(shown[1]).toContain("older two");
    expect(shown[2]).toContain("newest");

    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("TROUPE_")));
    const follow = spawn(process.execPath, [TROUPE_BIN, "daemon", "logs", "-f", "-n", "1"], { env: { ...clean, TROUPE_HOME: home } });
    let out = "";
    follow.stdout.on("data", (d: Buffer) => (out += d.toString()));
    try {
      await until(() => out.includes("newest"), 30_000, "the follower's first line");
      // Rotated as the logger does it: the current file moves to .1, a new one starts and grows past the old size.
      const { rename } = await import("node:fs/promises");
      await rename(join(logs, "troupe.log"), join(logs, "troupe.log.1"));
      await writeFile(join(logs, "troupe.log"), entry("after the rotation, a line longer than the one before it"));
      await until(() => out.includes("after the rotation"), 30_000, "the line written after the rotation");
    } finally {
      follow.kill("SIGKILL");
    }
  });
});
