import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { writeHome } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeOpenAi, type FakeOpenAi, type RecordedRequest } from "../fixtures/fake-openai.js";
import { closeAfterEach } from "../helpers/teardown.js";

/** The user's message as sent, without the runtime context that heads it. */
const sentText = (req: RecordedRequest) => String(req.body.messages.findLast((m) => m.role === "user")?.content).replace(/^\[Runtime Context — metadata only, not instructions\][\s\S]*?\[\/Runtime Context\]\n\n/, "");

/** `troupe agent` takes input as people give it: piped, from a file, long. */
describe("troupe agent input without a terminal", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  closeAfterEach(() => [fake]);

  it("-m - and piped stdin are one whole message, with no prompt printed", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "Got it." }));
    const home = await tmp();
    await writeHome(home, fake.url);
    const dash = await runCli(["agent", "-m", "-"], { TROUPE_HOME: home }, "line one\nline two\n");
    expect(dash.stderr).toBe("");
    expect(dash.stdout).toBe("Got it.\n");
    const piped = await runCli(["agent", "--session", "cli:piped"], { TROUPE_HOME: home }, "first line\n\nsecond line\n");
    expect(piped.stderr).toBe("");
    expect(piped.stdout).toBe("Got it.\n");
    expect(fake.requests.map(sentText)).toEqual(["line one\nline two", "first line\n\nsecond line"]);
  });

  it("a message as long as the control API takes goes through -m and -m -, in-process and to the daemon", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "Long read." }));
    const home = await tmp();
    // This is about the transport taking long messages whole; memory stays out of it: a window they fit in
    // (no consolidation request) and no Dream run at the daemon's start.
    await writeHome(home, fake.url, { defaults: { contextWindowTokens: 1_000_000, dream: { enabled: false } }, config: { gateway: { port: 0 } } });
    const long = `${"word ".repeat(25_000)}end`;
    const huge = `${"x".repeat(900_000)} end`;
    expect((await runCli(["agent", "-m", long], { TROUPE_HOME: home })).stdout).toBe("Long read.\n");
    expect((await runCli(["agent", "-m", "-"], { TROUPE_HOME: home }, huge)).stdout).toBe("Long read.\n");
    try {
      expect((await runCli(["daemon", "start"], { TROUPE_HOME: home })).code).toBe(0);
      const viaDaemon = await runCli(["agent", "-m", "-", "-s", "api:long"], { TROUPE_HOME: home }, huge);
      expect(viaDaemon.stderr).toBe("");
      expect(viaDaemon.stdout).toBe("Long read.\n");
    } finally {
      await runCli(["daemon", "stop"], { TROUPE_HOME: home });
    }
    expect(fake.requests.map((r) => sentText(r).length)).toEqual([long.length, huge.length, huge.length]);
  }, 120_000);

  // nanobot's `agent -m ""` takes the empty text as no -m at all (it opens its prompt); troupe refuses it,
  // saying which input was empty: the -m text, or stdin (-m -, piped).
  it("an empty -m text is refused as such, and an empty stdin as that, before any model call", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "should not be asked" }));
    const home = await tmp();
    await writeHome(home, fake.url);
    for (const text of ["", "   "]) {
      const r = await runCli(["agent", "-m", text], { TROUPE_HOME: home });
      expect(r).toEqual({ code: 1, stdout: "", stderr: "no message: the -m text is empty; give the message after -m (or -m - to read it from stdin)\n" });
    }
    const stdin = await runCli(["agent", "-m", "-"], { TROUPE_HOME: home }, "\n");
    expect(stdin.code).toBe(1);
    expect(stdin.stderr).toMatch(/^no message: stdin was empty; /);
    expect(fake.requests).toHaveLength(0);
  });

  it("/stop when nothing runs answers that, in-process as through the daemon", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "should not be asked" }));
    const home = await tmp();
    await writeHome(home, fake.url);
    const r = await runCli(["agent", "-m", "/stop"], { TROUPE_HOME: home });
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("Nothing is running.\n");
    expect(r.code).toBe(0);
    expect(fake.requests).toHaveLength(0);
  });
});
