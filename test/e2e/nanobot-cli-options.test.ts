import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { closedPort } from "../helpers/ports.js";
import { writeHome } from "../helpers/daemon.js";
import { startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";

/** The command-line options of nanobot's commands that a nanobot user types (nanobot/cli/commands.py). */
describe("nanobot's CLI options", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let gateway: GatewayProcess | undefined;
  closeAfterEach(() => [gateway, fake]);

  // nanobot tests/cli/test_commands.py: test_gateway_uses_configured_port_when_cli_flag_is_missing,
  // test_gateway_cli_port_overrides_configured_port (gateway.port 18791, --port 18792: it is on 18792).
  it("gateway --port / -p overrides gateway.port for that run; without it the configured port is used", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "Hello." }));
    const home = await tmp();
    const [configured, flag, short] = [await closedPort(), await closedPort(), await closedPort()];
    await writeHome(home, fake.url, { config: { gateway: { port: configured } } });
    for (const [args, port] of [[[], configured], [["--port", String(flag)], flag], [["-p", String(short)], short]] as const) {
      gateway = await startGateway(home, {}, 60_000, [...args]);
      expect(gateway.url).toBe(`http://127.0.0.1:${port}`);
      // The other commands find the daemon where it listens.
      const status = await runCli(["daemon", "status"], { TROUPE_HOME: home });
      expect(status.code).toBe(0);
      gateway.proc.kill("SIGTERM");
      expect((await gateway.exited).code).toBe(0);
      gateway = undefined;
    }
  }, 120_000);

  it("gateway --port that is not a port number is refused, saying what it takes", async () => {
    const home = await tmp();
    for (const bad of ["abc", "70000", "-1", "80.5"]) {
      const r = await runCli(["gateway", "--port", bad], { TROUPE_HOME: home });
      expect(r.code).toBe(1);
      expect(r.stderr.trim()).toBe(`--port must be a port number from 0 to 65535, not ${bad}`);
    }
  });

  it("gateway --port on a port in use says so, and how to choose another", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "Hello." }));
    const home = await tmp();
    await writeHome(home, fake.url, { config: { gateway: { port: 0 } } });
    const held = createServer();
    await new Promise<void>((resolve) => held.listen(0, "127.0.0.1", resolve));
    const { port } = held.address() as { port: number };
    try {
      const r = await runCli(["gateway", "--port", String(port)], { TROUPE_HOME: home });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`port ${port} on 127.0.0.1 is in use; stop what holds it, or choose a free port: gateway.port in the config (troupe gateway --port N for one run)`);
    } finally {
      await new Promise((resolve) => held.close(resolve));
    }
  }, 60_000);

  // nanobot's agent: --logs/--no-logs, "Show nanobot runtime logs during chat", off by default.
  it("agent --logs shows the runtime's log lines on stderr; --no-logs, the default, does not", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "Hello." }));
    const home = await tmp();
    await writeHome(home, fake.url);
    const quiet = await runCli(["agent", "-m", "hi"], { TROUPE_HOME: home });
    expect(quiet).toEqual({ code: 0, stdout: "Hello.\n", stderr: "" });
    const noLogs = await runCli(["agent", "--no-logs", "-m", "hi"], { TROUPE_HOME: home });
    expect(noLogs).toEqual({ code: 0, stdout: "Hello.\n", stderr: "" });
    const logs = await runCli(["agent", "--logs", "-m", "hi"], { TROUPE_HOME: home });
    expect(logs.code).toBe(0);
    expect(logs.stdout).toBe("Hello.\n");
    expect(logs.stderr).toContain("runtime ready");
    expect(logs.stderr).toContain("turn finished");
  });

  it("agent --logs through the daemon says where the daemon's log lines are", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "Hello." }));
    const home = await tmp();
    await writeHome(home, fake.url, { config: { gateway: { port: 0 } } });
    gateway = await startGateway(home);
    const r = await runCli(["agent", "--logs", "-m", "hi"], { TROUPE_HOME: home });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("Hello.\n");
    expect(r.stderr).toBe("(--logs: the daemon answers this chat; its log lines are in troupe daemon logs -f)\n");
  }, 60_000);
});
