import { chmod, mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isAlive } from "../../src/cli/pidfile.js";
import { runCli } from "../helpers/cli.js";
import { writeHome, writeConfig } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { closeAfterEach, detachedDaemon } from "../helpers/teardown.js";

/** A broken config, or a bad environment, never locks a user out of the daemon that runs. */
describe("troupe with a broken config or environment", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let home: string | undefined;
  closeAfterEach(() => [detachedDaemon(home), fake]);

  it("daemon status|logs|stop and sessions list|show need only the data dir and the token", async () => {
    fake = await startFakeOpenAi([{ content: "hello back" }]);
    home = await tmp();
    const env = { TROUPE_HOME: home };
    await writeHome(home, fake.url, { config: { gateway: { port: 0 } } });
    expect((await runCli(["daemon", "start"], env)).code).toBe(0);
    const { pid } = JSON.parse(await readFile(join(home, "daemon.pid"), "utf8")) as { pid: number };
    expect((await runCli(["agent", "-m", "hi", "-s", "api:x"], env)).stdout).toBe("hello back\n");

    // The config is edited while the daemon runs: a typo, and a variable this shell does not have.
    await writeConfig(home, { agents: { defaults: { maxTokens: "lots" } }, providers: { custom: { apiKey: "${NOT_SET_HERE}" } } });
    const broken = await runCli(["status"], env);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain("NOT_SET_HERE");

    const status = await runCli(["daemon", "status"], env);
    expect(status.stderr).toBe("");
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`^troupe daemon running \\(pid ${pid}\\)`));
    const list = await runCli(["sessions", "list"], env);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/\napi:x +1 /);
    const show = await runCli(["sessions", "show", "api:x"], env);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain("  assistant: hello back");
    const logs = await runCli(["daemon", "logs", "-n", "100"], env);
    expect(logs.code).toBe(0);
    expect(logs.stdout).toContain("gateway listening");

    const stop = await runCli(["daemon", "stop"], env);
    expect(stop.stderr).toBe("");
    expect(stop.stdout).toBe(`troupe daemon stopped (pid ${pid})\n`);
    expect(isAlive(pid)).toBe(false);
    home = undefined;
    // Without a daemon the store is read directly, still without the config.
    const direct = await runCli(["sessions", "list"], env);
    expect(direct.code).toBe(0);
    expect(direct.stdout).toMatch(/\napi:x +1 /);
  });

  it("an error caused by an environment variable names the variable, not config.json", async () => {
    const dir = await tmp();
    await writeHome(dir, "http://127.0.0.1:9/v1");
    const r = await runCli(["status"], { TROUPE_HOME: dir, TROUPE_AGENTS__DEFAULTS__MAX_TOOL_ITERATIONS: "abc" });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^config error in environment variable TROUPE_AGENTS__DEFAULTS__MAX_TOOL_ITERATIONS=abc: agents\.defaults\.maxToolIterations: /)]);
    expect(r.stderr).not.toContain("config.json");
  });

  it("a data dir it cannot write to gets one line saying so", async () => {
    const parent = await tmp();
    const dir = join(parent, "home");
    await mkdir(dir);
    await writeHome(dir, "http://127.0.0.1:9/v1");
    await chmod(parent, 0o755);
    await chmod(dir, 0o555);
    // root writes anywhere: the test runs the CLI as nobody then.
    const as = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined;
    for (const args of [["agent", "-m", "hi"], ["onboard"]]) {
      const r = await runCli(args, { TROUPE_HOME: dir }, undefined, as);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toBe(`troupe: cannot write to the data dir ${dir} (permission denied); make it writable, or point TROUPE_HOME at another directory\n`);
    }
  });
});
