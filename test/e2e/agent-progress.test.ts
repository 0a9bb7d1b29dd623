import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { runCli, TROUPE_BIN } from "../helpers/cli.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startSubagentModel } from "../fixtures/subagent-model.js";
import { writeHome, writeConfig } from "../helpers/daemon.js";
import { startGateway } from "../helpers/gateway.js";
import { closeAfterEach } from "../helpers/teardown.js";

/** `troupe agent` on a 100-column pseudo-terminal (util-linux `script`); waitFor polls the whole screen for a pattern. */
function terminalAgent(home: string) {
  const child = spawn("script", ["-qfec", `stty cols 100 rows 40; ${process.execPath} ${TROUPE_BIN} agent`, "/dev/null"], { env: { ...process.env, TROUPE_HOME: home, TERM: "xterm" } });
  let screen = "";
  child.stdout.on("data", (d: Buffer) => (screen += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  const waitFor = async (pattern: RegExp) => {
    const deadline = Date.now() + 30_000;
    while (!pattern.test(screen)) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern}; screen: ${JSON.stringify(screen)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  return { child, screen: () => screen, exited, waitFor };
}

/** Progress where people wait: `troupe agent` on a real pseudo-terminal shows the turn's state, each tool as it runs and a retried model call. */
describe("troupe agent progress", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  closeAfterEach(() => [fake]);

  const script = () => {
    let failedOnce = false;
    return (req: { body: { messages: Array<{ role: string }> } }) => {
      if (req.body.messages.at(-1)?.role === "tool") return { content: "All tested." };
      if (!failedOnce) {
        failedOnce = true;
        return { status: 503, headers: { "retry-after": "1" } };
      }
      return { toolCalls: [{ name: "exec", arguments: { command: "sleep 2" } }] };
    };
  };

  it("on a terminal: a spinner with the retry, the tool and its seconds, then the reply", async () => {
    fake = await startFakeOpenAi([], script());
    const home = await tempDir();
    await writeConfig(home, { agents: { defaults: { provider: "custom", model: "m" } }, providers: { custom: { apiBase: fake.url } } });
    const { child, screen, exited, waitFor } = terminalAgent(home);
    try {
      await waitFor(/you> /);
      child.stdin.write("run the tests\r");
      await waitFor(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] model call failed \(503\), retrying in 1 s \(\d+ s\)/);
      await waitFor(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] \$ sleep 2 \(1 s\)/);
      await waitFor(/All tested\.[\s\S]*you> /);
      // The spinner was taken off its line before the reply was written.
      const reply = screen().indexOf("All tested.");
      expect(screen().slice(Math.max(0, reply - 12), reply)).toContain("\r\x1b[K");
      child.stdin.write("\x04");
      const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r("still running"), 15_000))]);
      expect(code, `screen: ${JSON.stringify(screen())}`).toBe(0);
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("piped: only the reply, no spinner", async () => {
    fake = await startFakeOpenAi([], script());
    const home = await tempDir();
    await writeConfig(home, { agents: { defaults: { provider: "custom", model: "m" } }, providers: { custom: { apiBase: fake.url } } });
    const r = await runCli(["agent", "-m", "run the tests"], { TROUPE_HOME: home });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("All tested.\n");
    expect(r.stdout + r.stderr).not.toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/);
    expect(r.stdout + r.stderr).not.toContain("\x1b[K");
  });

  it("through the daemon, interactive: a subagent's report is printed as it arrives, without a new message", async () => {
    const model = await startSubagentModel({ subagentMs: 1_500 });
    fake = model.fake;
    const home = await tempDir();
    await writeHome(home, fake.url, { config: { gateway: { port: 0 } } });
    const g = await startGateway(home);
    const { child, screen, exited, waitFor } = terminalAgent(home);
    try {
      await waitFor(/\(daemon pid \d+\)[\s\S]*you> /);
      child.stdin.write("please spawn 1\r");
      await waitFor(/Started 1\.[\s\S]*you> /);
      // Nothing typed: the report comes to the prompt, which is drawn again below it.
      await waitFor(/Summary: report on t1[\s\S]*you> /);
      // Each printed once (a streamed line is shown raw, then rendered in its place: one finished line).
      expect(screen().match(/Started 1\.\r\n/g), JSON.stringify(screen())).toHaveLength(1);
      expect(screen().match(/Summary: report on t1/g), JSON.stringify(screen())).toHaveLength(1);
      child.stdin.write("\x04");
      const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r("still running"), 15_000))]);
      expect(code, `screen: ${JSON.stringify(screen())}`).toBe(0);
    } finally {
      child.kill("SIGKILL");
      g.proc.kill("SIGTERM");
      await g.exited;
    }
  });
});
