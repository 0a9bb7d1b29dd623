import { randomUUID } from "node:crypto";
import { existsSync, realpathSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import { chooseExecSandbox, sandboxNotice, type ExecSandboxSetting } from "../../src/tools/bwrap.js";
import { isAlive } from "../../src/cli/pidfile.js";
import { planBatches } from "../../actors/run-tools.js";
import { execTimeoutOf, execTool } from "../../src/tools/builtin/exec.js";
import { grepTool } from "../../src/tools/builtin/grep.js";
import { readFileTool } from "../../src/tools/builtin/read-file.js";
import { createToolRegistry } from "../../src/tools/registry.js";
import { compileAllowPatterns, compilePatterns, DEFAULT_DENY_PATTERNS, refusalOf, type ExecPolicy } from "../../src/tools/builtin/exec-guard.js";
import { runner, sandboxOf } from "../helpers/tools.js";
import { useTempDirs } from "../helpers/tmp.js";
import { pidsWith, requireBwrap, SKIP_BWRAP } from "../helpers/bwrap.js";
import { until } from "../helpers/wait.js";

const policy = (ws: string, over: Partial<ExecPolicy> = {}): ExecPolicy => ({
  deny: compilePatterns(DEFAULT_DENY_PATTERNS),
  allow: [],
  restrict: true,
  roots: [ws],
  ...over,
});


describe("exec", () => {
  const tmp = useTempDirs();

  async function setup(over: Partial<ExecPolicy> = {}, env: NodeJS.ProcessEnv = process.env, allowedEnvKeys: string[] = []) {
    const ws = await tmp();
    const tool = execTool({ sandbox: sandboxOf(ws), policy: policy(ws, over), defaultTimeout: 60, pathAppend: "", allowedEnvKeys, env, isolation: { kind: "none" } });
    return { ws, run: runner([tool], ws) };
  }

  it("runs in the workspace and reports output, stderr and the exit code", async () => {
    const { ws, run } = await setup();
    expect(await run("exec", { command: "pwd; echo oops >&2; exit 3" })).toBe(`${ws}\nSTDERR:\noops\n\nExit code: 3`);
    expect(await run("exec", { command: "mkdir -p sub && cd sub && touch f", working_dir: "." })).toBe("(no output)\n\nExit code: 0");
    expect(await run("exec", { command: "ls", working_dir: "sub" })).toBe("f\n\nExit code: 0");
  });

  it.each([
    "rm -rf build",
    "rm -r ./x",
    "rm -f -R x",
    "sudo mkfs.ext4 /dev/sda1",
    "dd if=/dev/zero of=disk.img",
    "echo x > /dev/sda",
    "shutdown -h now",
    "reboot",
    ":(){ :|:& };:",
    "echo '{}' >> memory/history.jsonl",
    "cat x | tee memory/history.jsonl",
    "sed -i s/a/b/ memory/history.jsonl",
    "echo 0 > memory/.dream_cursor",
    "echo 99 > memory/.cursor",
    "cp /tmp/x memory/.cursor",
  ])("refuses the dangerous command %s", async (command) => {
    const { run } = await setup();
    expect(await run("exec", { command })).toMatch(/^Error: command refused by the safety guard: it matches the deny pattern/);
  });

  it("lets harmless look-alikes through", () => {
    const p = policy("/ws", { restrict: false });
    for (const command of ["rm -f a.txt", "grep -r format .", "cat memory/history.jsonl | wc -l", "cat memory/.cursor", "echo rebooted-ness"]) {
      expect(refusalOf(command, "/ws", p), command).toBeUndefined();
    }
  });

  it("lets a restricted command run from a read-only root (the built-in skills) but not redirect into it", () => {
    const p = policy("/ws", { roots: ["/ws", "/pkg/skills"], readOnlyRoots: ["/pkg/skills"] });
    expect(refusalOf("node /pkg/skills/x/scripts/a.mjs > out.txt", "/ws", p)).toBeUndefined();
    expect(refusalOf("cp -r /pkg/skills/x skills/x", "/ws", p)).toBeUndefined();
    for (const command of ["echo hi > /pkg/skills/x/SKILL.md", "echo hi >>/pkg/skills/y", "ls 2> /pkg/skills/log"]) {
      expect(refusalOf(command, "/ws", p), command).toMatch(/^command refused: \/pkg\/skills\/\S+ is read-only \(the built-in skills\)/);
    }
  });

  it("applies allow patterns when configured", async () => {
    const { run } = await setup({ allow: compileAllowPatterns(["git\\b.*", "ls\\b.*"]) });
    expect(await run("exec", { command: "ls" })).toMatch(/Exit code: 0/);
    expect(await run("exec", { command: "ls && whoami" })).toMatch(/`whoami` matches none of tools.exec.allowPatterns/);
    expect(await run("exec", { command: "whoami" })).toMatch(/matches none of tools.exec.allowPatterns/);
  });

  it("keeps a restricted command inside the workspace", async () => {
    const { run } = await setup();
    expect(await run("exec", { command: "cat /etc/passwd" })).toMatch(/\/etc\/passwd is outside the workspace/);
    expect(await run("exec", { command: "cat ../secret" })).toMatch(/`\.\.` would leave the workspace/);
    expect(await run("exec", { command: "cd .. && ls" })).toMatch(/`\.\.` would leave the workspace/);
    expect(await run("exec", { command: "ls ~" })).toMatch(/~ is outside the workspace/);
    expect(await run("exec", { command: "ls", working_dir: "/tmp" })).toMatch(/outside the workspace/);
    expect(await run("exec", { command: "echo hi > /dev/null; echo see https://example.com/a/b" })).not.toMatch(/refused/);
  });

  it("gives the child a scrubbed environment: no keys or tokens", async () => {
    const env = { PATH: process.env.PATH, HOME: "/home/u", LANG: "C.UTF-8", OPENAI_API_KEY: "sk-secret", TELEGRAM_TOKEN: "123:abc", GIT_AUTHOR_NAME: "me" };
    const { run } = await setup({}, env, ["GIT_AUTHOR_NAME"]);
    const out = await run("exec", { command: "env | sort" });
    expect(out).toContain("HOME=/home/u");
    expect(out).toContain("GIT_AUTHOR_NAME=me");
    expect(out).not.toContain("sk-secret");
    expect(out).not.toContain("123:abc");
  });

  it("on timeout kills the whole process group, grandchildren included", async () => {
    const { ws, run } = await setup();
    const started = Date.now();
    const out = await run("exec", { command: "(sleep 60; echo survived > late.txt) & echo $! > grandchild.pid; echo started; wait", timeout: 1 });
    expect(out).toMatch(/^Error: command timed out after 1s; its process group was killed\.\nOutput so far:\nstarted/);
    expect(Date.now() - started).toBeLessThan(5_000);
    const pid = Number((await readFile(join(ws, "grandchild.pid"), "utf8")).trim());
    await new Promise((r) => setTimeout(r, 300));
    expect(isAlive(pid)).toBe(false);
  });

  it("a config timeout of 0 sets no limit, and one above 600 is kept (nanobot's _resolve_timeout)", async () => {
    // nanobot tests/tools/test_tool_validation.py::test_resolve_timeout_config_uncapped_and_unlimited
    expect(execTimeoutOf(undefined, 3600)).toBe(3600);
    expect(execTimeoutOf(undefined, 0)).toBeUndefined();
    expect(execTimeoutOf(5, 0)).toBe(5);
    const ws = await tmp();
    const unlimited = execTool({ sandbox: sandboxOf(ws), policy: policy(ws), defaultTimeout: 0, pathAppend: "", allowedEnvKeys: [], isolation: { kind: "none" } });
    expect(unlimited.description).toContain("no time limit unless given");
    expect(await runner([unlimited], ws)("exec", { command: "sleep 0.2; echo ok" })).toBe("ok\n\nExit code: 0");
  });

  it("caps a call's timeout above 600 rather than refusing the call", async () => {
    // nanobot tests/tools/test_tool_validation.py::test_exec_timeout_capped_at_max
    const { run } = await setup();
    expect(await run("exec", { command: "echo ok", timeout: 9999 })).toBe("ok\n\nExit code: 0");
    expect(execTimeoutOf(9999, 60)).toBe(600);
    expect(await run("exec", { command: "echo ok", timeout: 0 })).toMatch(/^Error: invalid arguments for exec: timeout: /);
  });

  it("returns when the shell exits even if a background job holds the pipes", async () => {
    const { ws, run } = await setup();
    const started = Date.now();
    expect(await run("exec", { command: "sleep 30 & echo $! > bg.pid; echo bg", timeout: 20 })).toBe("bg\n\nExit code: 0");
    // Far sooner than the background job (30 s) or the timeout (20 s).
    expect(Date.now() - started).toBeLessThan(10_000);
    process.kill(Number((await readFile(join(ws, "bg.pid"), "utf8")).trim()), "SIGKILL");
  });

  it("caps long output at 10,000 chars, keeping head and tail", async () => {
    const { run } = await setup();
    const out = await run("exec", { command: "seq 1 20000" });
    expect(out.length).toBeLessThan(10_300);
    expect(out).toMatch(/^1\n2\n3\n/);
    expect(out).toMatch(/chars cut; redirect to a file/);
    expect(out).toMatch(/20000\n\nExit code: 0$/);
  });

  it("is exclusive: a turn's batch plan runs it alone, read-only tools together", async () => {
    const ws = await tmp();
    const sb = sandboxOf(ws);
    const exec = execTool({ sandbox: sb, policy: policy(ws), defaultTimeout: 60, pathAppend: "", allowedEnvKeys: [], isolation: { kind: "none" } });
    const registry = createToolRegistry([readFileTool(sb), grepTool(sb), exec]);
    const call = (id: string, name: string) => ({ id, name, arguments: {}, rawArguments: "{}" });
    const plan = planBatches([call("1", "read_file"), call("2", "grep"), call("3", "exec"), call("4", "read_file"), call("5", "grep")], registry);
    expect(plan.map((b) => b.map((c) => c.id))).toEqual([["1", "2"], ["3"], ["4", "5"]]);
  });
});

/** A shell expression for `path` that no pattern can read: how a model gets a path past a deny list. */
const hidden = (path: string) => `"$(echo ${Buffer.from(path).toString("base64")} | base64 -d)"`;

describe.skipIf(SKIP_BWRAP)("exec in the bubblewrap sandbox (tools.restrictToWorkspace)", () => {
  const tmp = useTempDirs();
  const outside: string[] = [];
  afterEach(async () => {
    await Promise.all(outside.splice(0).map((d) => rm(d, { recursive: true, force: true })));
  });
  const TOKEN = "token-unit-secret-0123456789";
  const KEY = "sk-unit-config-secret-0123456789";
  const DAEMON_SECRET = "daemon-env-secret-0123456789";

  /** A data dir laid out as troupe's (workspace and media inside), a home, and a directory elsewhere on disk. */
  async function setup(layout: { workspaceIsHome?: boolean } = {}) {
    const bin = requireBwrap();
    const root = await tmp();
    const home = join(root, "home");
    const dataDir = layout.workspaceIsHome ? join(home, ".troupe") : join(root, "data");
    const ws = layout.workspaceIsHome ? home : join(dataDir, "workspace");
    const media = join(dataDir, "media");
    await mkdir(ws, { recursive: true });
    await mkdir(home, { recursive: true });
    await mkdir(media, { recursive: true });
    await writeFile(join(dataDir, "gateway.token"), TOKEN);
    await writeFile(join(dataDir, "config.json"), JSON.stringify({ providers: { openai: { apiKey: KEY } } }));
    await writeFile(join(media, "photo.txt"), "a photo the user sent\n");
    await writeFile(join(home, ".home-secret"), "in the home");
    // Outside /tmp (the sandbox has its own), the home and the data dir: only read-only keeps it.
    const elsewhere = await mkdtemp(join("/var/tmp", "troupe-test-"));
    outside.push(elsewhere);
    await writeFile(join(elsewhere, "victim.txt"), "keep me");
    const env = { PATH: process.env.PATH, HOME: home, LANG: "C.UTF-8", FAKE_DAEMON_SECRET: DAEMON_SECRET };
    const tool = execTool({
      sandbox: sandboxOf(ws, [media]),
      policy: policy(ws, { roots: [ws, media] }),
      defaultTimeout: 60,
      pathAppend: "",
      allowedEnvKeys: [],
      env,
      isolation: { kind: "bwrap", bin, hide: [dataDir, home], readable: [media] },
    });
    return { root, home, dataDir, ws, media, elsewhere, run: runner([tool], ws) };
  }

  const leaks = (out: string) => [TOKEN, KEY, DAEMON_SECRET].filter((s) => out.includes(s));

  it.each([
    ["gateway.token via $(dirname $PWD)", `cat "$(dirname "$PWD")/gateway.token"`],
    ["config.json via $(dirname $PWD)", `cat "$(dirname "$PWD")/config.json"`],
    ["config.json via cd; pwd", `cd "$(dirname "$(pwd)")" && cat config.json gateway.token`],
    ["config.json from python3", `python3 -c 'import os; print(open(os.path.join(os.path.dirname(os.getcwd()), "config.json")).read())'`],
    ["config.json by a base64 path", `cat ${hidden("/")}$(dirname "$PWD" | cut -c2-)${hidden("/")}config.json`],
  ])("cannot read the data dir: %s", async (_, command) => {
    const { run } = await setup();
    const out = await run("exec", { command });
    expect(leaks(out)).toEqual([]);
    expect(out).toMatch(/No such file|FileNotFoundError/);
  });

  it("cannot read the daemon's environment through /proc (its own pid 1 included)", async () => {
    const { run } = await setup();
    const out = await run("exec", { command: `p=${hidden("/proc")}; for f in "$p/1/environ" "$p/$PPID/environ" "$p/${process.pid}/environ"; do tr '\\0' '\\n' < "$f"; echo; done` });
    expect(leaks(out)).toEqual([]);
    // Whatever environment is visible is the scrubbed one bwrap was started with.
    const keys = out.split("\n").filter((l) => /^[A-Za-z_][A-Za-z0-9_]*=/.test(l)).map((l) => l.split("=")[0]);
    expect(keys.length).toBeGreaterThan(0);
    expect(new Set(keys)).toEqual(new Set(["PATH", "HOME", "LANG"]));
  });

  it("sees an empty home", async () => {
    const { run } = await setup();
    const out = await run("exec", { command: `cd && pwd && ls -A; ls -A "$HOME"; echo end` });
    expect(out).not.toContain(".home-secret");
    expect(out).toMatch(/end\n\nExit code: 0$/);
  });

  it("deletes nothing outside the workspace: it is not there, the system is read-only", async () => {
    const { elsewhere, run } = await setup();
    const out = await run("exec", { command: `find ${hidden(elsewhere)} -delete; rm ${hidden(`${elsewhere}/victim.txt`)}; echo x > ${hidden("/usr/troupe-probe")}; mkdir ${hidden("/var")}` });
    expect(out).toMatch(/victim\.txt.: No such file or directory[^]*troupe-probe: Read-only file system[^]*\/var.: Read-only file system/);
    expect(await readFile(join(elsewhere, "victim.txt"), "utf8")).toBe("keep me");
  });

  it("writes nothing outside the workspace, the data dir included", async () => {
    const { dataDir, elsewhere, media, run } = await setup();
    const config = await readFile(join(dataDir, "config.json"), "utf8");
    const out = await run("exec", {
      command: `echo pwned > "$(dirname "$PWD")/config.json"; echo x > ${hidden(`${elsewhere}/new.txt`)}; echo x > "$(dirname "$PWD")/media/new.txt"`,
    });
    expect(out).toMatch(/Read-only file system/);
    expect(await readFile(join(dataDir, "config.json"), "utf8")).toBe(config);
    expect(existsSync(join(elsewhere, "new.txt"))).toBe(false);
    expect(existsSync(join(media, "new.txt"))).toBe(false);
  });

  it("reads and writes the workspace, reads media, has a private /tmp", async () => {
    const { ws, run } = await setup();
    const scratch = `/tmp/troupe-scratch-${randomUUID()}`;
    outside.push(scratch);
    const out = await run("exec", { command: `echo made > made.txt && mkdir -p sub && echo deep > sub/f && cat "$(dirname "$PWD")/media/photo.txt" && echo t > ${hidden(scratch)} && cat ${hidden(scratch)}` });
    expect(out).toBe("a photo the user sent\nt\n\nExit code: 0");
    expect(await readFile(join(ws, "made.txt"), "utf8")).toBe("made\n");
    expect(await readFile(join(ws, "sub/f"), "utf8")).toBe("deep\n");
    expect(await run("exec", { command: "pwd; cat f", working_dir: "sub" })).toBe(`${realpathSync(ws)}/sub\ndeep\n\nExit code: 0`);
    expect(existsSync(scratch)).toBe(false);
  });

  it("keeps the data dir hidden when the workspace is the home that holds it", async () => {
    const { run } = await setup({ workspaceIsHome: true });
    const out = await run("exec", { command: "ls -A; cat .troupe/gateway.token .troupe/config.json" });
    expect(out).toMatch(/^\.home-secret\n\.troupe\n/);
    expect(leaks(out)).toEqual([]);
    expect(out).toMatch(/No such file/);
  });

  it("on timeout kills everything in the sandbox", async () => {
    const { run } = await setup();
    const marker = `troupe-tree-${randomUUID()}`;
    const running = run("exec", { command: `bash -c 'sleep 60; :' ${marker} & bash -c '(sleep 60; :) & wait' ${marker} & echo started; wait`, timeout: 2 });
    // bwrap, its init, the shell and the two jobs.
    await until(() => pidsWith(marker).length >= 5, 10_000, "the sandboxed processes");
    expect(await running).toMatch(/^Error: command timed out after 2s; its process group was killed\.\nOutput so far:\nstarted/);
    await until(() => pidsWith(marker).length === 0, 5_000, "every sandboxed process gone");
  });

  it("on cancel kills everything in the sandbox", async () => {
    const { run } = await setup();
    const marker = `troupe-cancel-${randomUUID()}`;
    const abort = new AbortController();
    const running = run("exec", { command: `bash -c 'sleep 60; :' ${marker} & wait` }, { signal: abort.signal });
    await until(() => pidsWith(marker).length >= 4, 10_000, "the sandboxed processes");
    abort.abort();
    await expect(running).rejects.toThrow("command cancelled; its process group was killed.");
    await until(() => pidsWith(marker).length === 0, 5_000, "every sandboxed process gone");
  });

  it("returns when the command exits, and its background jobs end with it", async () => {
    const { run } = await setup();
    const marker = `troupe-bg-${randomUUID()}`;
    expect(await run("exec", { command: `bash -c 'sleep 30; :' ${marker} & echo bg`, timeout: 20 })).toBe("bg\n\nExit code: 0");
    await until(() => pidsWith(marker).length === 0, 5_000, "the background job gone");
  });
});

describe("choosing exec's sandbox", () => {
  const tmp = useTempDirs();
  const tools = (sandbox: ExecSandboxSetting, restrictToWorkspace = true) => ({ restrictToWorkspace, exec: { sandbox } });

  it("auto uses bwrap when it is on PATH, and runs unisolated with a warning when not", async () => {
    const empty = await tmp();
    const withBwrap = await tmp();
    // Only its presence matters here: an executable file named bwrap.
    await writeFile(join(withBwrap, "bwrap"), "#!/bin/sh\n");
    await chmod(join(withBwrap, "bwrap"), 0o755);
    expect(chooseExecSandbox(tools("auto"), { PATH: `${empty}:${withBwrap}` }, "/c.json")).toEqual({ kind: "bwrap", bin: join(withBwrap, "bwrap") });
    const missing = chooseExecSandbox(tools("auto"), { PATH: empty }, "/c.json");
    expect(missing).toEqual({ kind: "none", why: "missing" });
    expect(sandboxNotice(missing)).toMatch(/^exec is not isolated: .*apt-get install bubblewrap.*set tools\.exec\.sandbox to "none"/);
  });

  it('"none" and an unrestricted workspace run unisolated without a warning', async () => {
    const empty = await tmp();
    expect(sandboxNotice(chooseExecSandbox(tools("none"), { PATH: empty }, "/c.json"))).toBeUndefined();
    expect(chooseExecSandbox(tools("none"), { PATH: process.env.PATH }, "/c.json")).toEqual({ kind: "none", why: "off" });
    expect(chooseExecSandbox(tools("auto", false), { PATH: process.env.PATH }, "/c.json")).toEqual({ kind: "none", why: "unrestricted" });
  });

  it('"bwrap" without bwrap is a config error that says how to fix it', async () => {
    const empty = await tmp();
    expect(() => chooseExecSandbox(tools("bwrap"), { PATH: empty }, "/c.json")).toThrow(ConfigError);
    expect(() => chooseExecSandbox(tools("bwrap"), { PATH: empty }, "/c.json")).toThrow(
      /config error in \/c\.json: tools\.exec\.sandbox: "bwrap" but bwrap is not on PATH; install bubblewrap \(apt-get install bubblewrap/,
    );
  });

  it("warns at start-up when bwrap is there but cannot build a sandbox", () => {
    expect(sandboxNotice({ kind: "bwrap", bin: "/x/bwrap" }, () => "bwrap: setting up uid map: Permission denied")).toMatch(
      /^exec's sandbox cannot start here \(bwrap: setting up uid map: Permission denied\)/,
    );
    expect(sandboxNotice({ kind: "bwrap", bin: requireBwrap() })).toBeUndefined();
  });
});
