import { spawn } from "node:child_process";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openStore } from "../../src/store/store.js";
import { listOpenTurns, listTurns } from "../../src/store/turns.js";
import { runCli, TROUPE_BIN } from "../helpers/cli.js";
import { writeHome } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { startFakeOpenAi, type FakeOpenAi, type RecordedRequest } from "../fixtures/fake-openai.js";
import { closeAfterEach, detachedDaemon } from "../helpers/teardown.js";

/** The text the user typed, without the runtime context that heads it. */
const typed = (req: RecordedRequest) => String(req.body.messages.findLast((m) => m.role === "user")?.content).split("\n").at(-1);

/** `troupe agent -m` as a process the test can interrupt (Ctrl-C is SIGINT to it). */
function startAgent(args: string[], home: string) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("TROUPE_")));
  const child = spawn(process.execPath, [TROUPE_BIN, "agent", ...args], { env: { ...clean, TROUPE_HOME: home }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, exited, output: () => ({ stdout, stderr }) };
}

describe("Ctrl-C on troupe agent -m stops the turn", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let daemonHome: string | undefined;
  closeAfterEach(() => [detachedDaemon(daemonHome), fake]);

  it("in-process: the turn ends cancelled with its tool call closed, exit 130, and nothing resumes it", async () => {
    fake = await startFakeOpenAi([], (req) => {
      if (typed(req) === "run it") return { toolCalls: [{ name: "exec", arguments: { command: "touch started && sleep 30 && echo ran >> ran.txt" } }] };
      return { content: "Next answer." };
    });
    const home = await tmp();
    await writeHome(home, fake.url);
    const agent = startAgent(["-m", "run it"], home);
    await until(() => stat(join(home, "workspace/started")).then(() => true), 60_000, "the tool to start");
    agent.child.kill("SIGINT");
    expect(await agent.exited, JSON.stringify(agent.output())).toBe(130);

    const store = await openStore(join(home, "store"));
    try {
      expect((await listTurns(store)).map((t) => [t.state, t.final])).toEqual([["cancelled", true]]);
      expect(await listOpenTurns(store)).toEqual([]);
    } finally {
      await store.close();
    }
    const show = await runCli(["sessions", "show", "cli:direct"], { TROUPE_HOME: home });
    expect(show.stdout).toContain("  tool exec: Cancelled by the user; this call may not have run.");

    const next = await runCli(["agent", "-m", "next"], { TROUPE_HOME: home });
    expect(next.stderr).toBe("");
    expect(next.stdout).toBe("Next answer.\n");
    expect(fake.requests.map(typed)).toEqual(["run it", "next"]);
    expect(await readFile(join(home, "workspace/ran.txt"), "utf8").catch(() => "never ran")).toBe("never ran");
  }, 120_000);

  /** A daemon whose model answers after 30 s, and `troupe agent -m "be slow"` through it, its model call under way. */
  async function slowTurnThroughDaemon() {
    fake = await startFakeOpenAi([{ content: "too late", delayMs: 30_000 }]);
    const home = await tmp();
    daemonHome = home;
    await writeHome(home, fake.url, { config: { gateway: { port: 0 } } });
    expect((await runCli(["daemon", "start"], { TROUPE_HOME: home })).code).toBe(0);
    const agent = startAgent(["-m", "be slow"], home);
    await until(() => fake!.inFlight() > 0, 60_000, "the model call");
    return { agent, home };
  }

  it("through the daemon: a /stop is sent before exiting 130, and the daemon's turn ends cancelled", async () => {
    const { agent, home } = await slowTurnThroughDaemon();
    agent.child.kill("SIGINT");
    expect(await agent.exited, JSON.stringify(agent.output())).toBe(130);
    expect(agent.output().stdout).not.toContain("too late");
    const show = await until(async () => {
      const r = await runCli(["sessions", "show", "cli:direct"], { TROUPE_HOME: home });
      return /\n {2}\S+ {2}\S+ \S+ {2}cancelled\n/.test(r.stdout) && r;
    }, 60_000, "the daemon's turn to end cancelled");
    expect(show.stdout).toContain("  assistant: Stopped.");
  }, 120_000);

  it("through the daemon: `troupe agent -m /stop` from another shell stops the running turn and exits 0; the stopped one does not", async () => {
    const { agent, home } = await slowTurnThroughDaemon();
    const stop = await runCli(["agent", "-m", "/stop"], { TROUPE_HOME: home });
    expect(stop.stdout).toBe("Stopping the running turn.\n");
    expect(stop.stderr).toBe("");
    expect(stop.code).toBe(0);
    // The turn that was stopped did not answer: its chat exits non-zero.
    expect(await agent.exited, JSON.stringify(agent.output())).toBe(1);
    expect(agent.output().stdout).not.toContain("too late");
  }, 120_000);
});
