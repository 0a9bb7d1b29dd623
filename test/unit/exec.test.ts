import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isAlive } from "../../src/cli/pidfile.js";
import { planBatches } from "../../actors/run-tools.js";
import { execTool } from "../../src/tools/builtin/exec.js";
import { grepTool } from "../../src/tools/builtin/grep.js";
import { readFileTool } from "../../src/tools/builtin/read-file.js";
import { createToolRegistry } from "../../src/tools/registry.js";
import { compilePatterns, DEFAULT_DENY_PATTERNS, refusalOf, type ExecPolicy } from "../../src/tools/builtin/exec-guard.js";
import { runner, sandboxOf } from "../helpers/tools.js";
import { useTempDirs } from "../helpers/tmp.js";

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
    const tool = execTool({ sandbox: sandboxOf(ws), policy: policy(ws, over), defaultTimeout: 60, pathAppend: "", allowedEnvKeys, env });
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
  ])("refuses the dangerous command %s", async (command) => {
    const { run } = await setup();
    expect(await run("exec", { command })).toMatch(/^Error: command refused by the safety guard: it matches the deny pattern/);
  });

  it("lets harmless look-alikes through", () => {
    const p = policy("/ws", { restrict: false });
    for (const command of ["rm -f a.txt", "grep -r format .", "cat memory/history.jsonl | wc -l", "echo rebooted-ness"]) {
      expect(refusalOf(command, "/ws", p), command).toBeUndefined();
    }
  });

  it("applies allow patterns when configured", async () => {
    const { run } = await setup({ allow: compilePatterns(["^git\\b", "^ls\\b"]) });
    expect(await run("exec", { command: "ls" })).toMatch(/Exit code: 0/);
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
    const exec = execTool({ sandbox: sb, policy: policy(ws), defaultTimeout: 60, pathAppend: "", allowedEnvKeys: [] });
    const registry = createToolRegistry([readFileTool(sb), grepTool(sb), exec]);
    const call = (id: string, name: string) => ({ id, name, arguments: {}, rawArguments: "{}" });
    const plan = planBatches([call("1", "read_file"), call("2", "grep"), call("3", "exec"), call("4", "read_file"), call("5", "grep")], registry);
    expect(plan.map((b) => b.map((c) => c.id))).toEqual([["1", "2"], ["3"], ["4", "5"]]);
  });
});
