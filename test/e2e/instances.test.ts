import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { runCli } from "../helpers/cli.js";
import { useTempDirs } from "../helpers/tmp.js";

/** nanobot's --config and --workspace on every command: two instances side by side, each with its own config, data and daemon. */
describe("--config and --workspace (real processes)", () => {
  const tmp = useTempDirs();
  const fakes: FakeOpenAi[] = [];
  const running: string[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((config) => runCli(["daemon", "stop", "--config", config], {})));
    await Promise.all(fakes.splice(0).map((f) => f.close()));
  });

  async function instance(root: string, name: string): Promise<string> {
    const fake = await startFakeOpenAi([], () => ({ content: `This is ${name}.` }));
    fakes.push(fake);
    await mkdir(join(root, name), { recursive: true });
    const config = join(root, name, "nanobot.json");
    await writeFile(
      config,
      JSON.stringify({ agents: { defaults: { provider: "custom", model: `model-${name}` } }, providers: { custom: { apiBase: fake.url, apiKey: "k" } }, gateway: { port: 0 } }),
    );
    return config;
  }

  it("two daemons run side by side, each found by its --config (before or after the command)", async () => {
    const root = await tmp();
    const a = await instance(root, "a");
    const b = await instance(root, "b");
    const startA = await runCli(["--config", a, "daemon", "start"], { HOME: root });
    expect(startA.code, startA.stderr).toBe(0);
    running.push(a);
    const startB = await runCli(["daemon", "start", "-c", b], { HOME: root });
    expect(startB.code, startB.stderr).toBe(0);
    running.push(b);
    // Each instance keeps its data beside its config.
    const pidA = JSON.parse(await readFile(join(root, "a", "daemon.pid"), "utf8")) as { pid: number };
    const pidB = JSON.parse(await readFile(join(root, "b", "daemon.pid"), "utf8")) as { pid: number };
    expect(pidA.pid).not.toBe(pidB.pid);
    expect(existsSync(join(root, "a", "store"))).toBe(true);
    expect(existsSync(join(root, "b", "store"))).toBe(true);

    const [ra, rb] = await Promise.all([runCli(["agent", "-m", "who are you?", "--config", a], { HOME: root }), runCli(["-c", b, "agent", "-m", "who are you?"], { HOME: root })]);
    expect(ra.stdout, ra.stderr).toBe("This is a.\n");
    expect(rb.stdout, rb.stderr).toBe("This is b.\n");
    const statusA = await runCli(["daemon", "status", "--config", a], { HOME: root });
    expect(statusA.code).toBe(0);
    expect(statusA.stdout).toContain(`(pid ${pidA.pid})`);
    const sessionsB = await runCli(["sessions", "list", "--config", b], { HOME: root });
    expect(sessionsB.stdout).toContain("cli:direct");

    const stopA = await runCli(["daemon", "stop", "--config", a], { HOME: root });
    expect(stopA.stdout).toBe(`troupe daemon stopped (pid ${pidA.pid})\n`);
    // The other instance is untouched.
    expect((await runCli(["daemon", "status", "-c", b], { HOME: root })).code).toBe(0);
  }, 180_000);

  it("--workspace puts the workspace where it says, for onboard and status alike", async () => {
    const root = await tmp();
    const config = await instance(root, "w");
    const workspace = join(root, "elsewhere", "ws");
    const onboard = await runCli(["onboard", "--config", config, "--workspace", workspace], { HOME: root });
    expect(onboard.code, onboard.stderr).toBe(0);
    expect(existsSync(join(workspace, "AGENTS.md"))).toBe(true);
    expect(existsSync(join(root, "w", "workspace"))).toBe(false);
    const status = await runCli(["-w", workspace, "-c", config, "status"], { HOME: root });
    expect(status.stdout).toContain(`config:    ${config}\n`);
    expect(status.stdout).toContain(`data dir:  ${join(root, "w")}\n`);
    expect(status.stdout).toContain(`workspace: ${workspace}\n`);
  }, 60_000);
});
