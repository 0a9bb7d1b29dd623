import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { writeHome } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeOpenAi, type FakeOpenAi, type FakeStep } from "../fixtures/fake-openai.js";
import { closeAfterEach, detachedDaemon } from "../helpers/teardown.js";

/**
 * A turn that uses up agents.defaults.maxToolIterations ends with an answer, as in nanobot: the model's
 * summary without tools (tests/agent/test_runner_core.py: test_runner_uses_no_tools_finalization_after_max_iterations),
 * or the fixed text when it gives none (test_runner_returns_max_iterations_fallback). `agent -m` prints it
 * as the reply and exits 0; one line on stderr says where the turn stopped and what raises the limit.
 */
describe("troupe agent when a turn reaches the tool-iteration limit", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let daemonHome: string | undefined;
  closeAfterEach(() => [detachedDaemon(daemonHome), fake]);

  const SUMMARY = "Read the directory twice. More investigation remains.";
  /** nanobot's case: two rounds of list_dir (here exec), then the summary, asked for without tools. */
  const twoRoundsThenSummary = (_req: unknown, index: number): FakeStep =>
    index < 2 ? { content: "still working", toolCalls: [{ name: "exec", arguments: { command: "ls" } }] } : { content: SUMMARY };
  const note = (dir: string) => `note: the turn stopped at the tool-iteration limit; raise agents.defaults.maxToolIterations in ${join(dir, "config.json")} to let it go further\n`;

  it("in-process: the summary is the reply on stdout, exit 0, one note on stderr", async () => {
    fake = await startFakeOpenAi([], twoRoundsThenSummary);
    const dir = await tmp();
    await writeHome(dir, fake.url, { defaults: { maxToolIterations: 2 } });
    const r = await runCli(["agent", "-m", "inspect the repo"], { TROUPE_HOME: dir });
    expect(r.stdout).toBe(`${SUMMARY}\n`);
    expect(r.stderr).toBe(note(dir));
    expect(r.code).toBe(0);
    expect(fake.requests).toHaveLength(3);
    expect(fake.requests[2]!.body.tools).toBeUndefined();
    expect((await runCli(["sessions", "list"], { TROUPE_HOME: dir })).stdout).toMatch(/\ncli:direct +1 +\d+ +\S+ \S+ +stopped at max iterations\n$/);
  });

  it("in-process: no summary (the model still calls tools) gives the fixed text as the reply", async () => {
    fake = await startFakeOpenAi([], () => ({ toolCalls: [{ name: "exec", arguments: { command: "echo again" } }] }));
    const dir = await tmp();
    await writeHome(dir, fake.url, { defaults: { maxToolIterations: 2 } });
    const r = await runCli(["agent", "-m", "loop"], { TROUPE_HOME: dir });
    expect(r.stdout).toBe("I reached the maximum number of tool iterations (2) without finishing. Tell me to continue, or narrow the task.\n");
    expect(r.stderr).toBe(note(dir));
    expect(r.code).toBe(0);
  });

  it("through the daemon: the same reply, note and exit code", async () => {
    fake = await startFakeOpenAi([], twoRoundsThenSummary);
    daemonHome = await tmp();
    await writeHome(daemonHome, fake.url, { defaults: { maxToolIterations: 2 }, config: { gateway: { port: 0 } } });
    expect((await runCli(["daemon", "start"], { TROUPE_HOME: daemonHome })).code).toBe(0);
    const r = await runCli(["agent", "-m", "inspect the repo"], { TROUPE_HOME: daemonHome });
    expect(r.stdout).toBe(`${SUMMARY}\n`);
    expect(r.stderr).toBe(note(daemonHome));
    expect(r.code).toBe(0);
    expect(fake.requests).toHaveLength(3);
  }, 120_000);
});
