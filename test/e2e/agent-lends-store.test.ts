import { existsSync, watch } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startFakeOpenAi, type FakeOpenAi, type RecordedRequest } from "../fixtures/fake-openai.js";
import { runCli } from "../helpers/cli.js";
import { writeHome } from "../helpers/daemon.js";
import { spawnPty, type PtySession } from "../helpers/pty.js";
import { closeAfterEach, detachedDaemon } from "../helpers/teardown.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";

const typed = (req: RecordedRequest) => String(req.body.messages.findLast((m) => m.role === "user")?.content).split("\n").at(-1);

describe("one process at a time, without lock-outs (real processes)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let pty: PtySession | undefined;
  let pty2: PtySession | undefined;
  let home: string | undefined;
  closeAfterEach(() => [pty, pty2, detachedDaemon(home), fake]);

  /** A data dir whose model holds its answer to "first" until `release`; the others are answered at once. */
  async function gatedHome() {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const model = await startFakeOpenAi([], async (req) => {
      if (typed(req) === "first") await gate;
      return { content: `${typed(req)} answer` };
    });
    fake = model;
    const dir = await tmp();
    await writeHome(dir, model.url, { config: { gateway: { port: 0 } } });
    return { dir, release, model };
  }

  it("while an interactive troupe agent runs in-process, agent -m and sessions work through it, and daemon start takes the chat over", async () => {
    fake = await startFakeOpenAi([], (req) => ({ content: `${typed(req)} answer` }));
    const dir = await tmp();
    await writeHome(dir, fake.url, { config: { gateway: { port: 0 } } });
    pty = spawnPty("agent", { TROUPE_HOME: dir });
    await pty.waitFor("(in-process)");
    await pty.waitFor("you> ");
    pty.type("hello\r");
    await pty.waitFor("hello answer");
    await pty.waitFor("you> ");
    // It lends the store once it has held it for a moment (LEND_AFTER_MS).
    await until(() => existsSync(join(dir, "agent.json")), 30_000, "agent.json");

    const list = await runCli(["sessions", "list"], { TROUPE_HOME: dir });
    expect(list.stderr).toBe("");
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^cli:direct +1 /m);
    // Another chat's one message, on the same session: it runs in the agent's process, after what runs there.
    const other = await runCli(["agent", "-m", "from outside"], { TROUPE_HOME: dir });
    expect(other).toMatchObject({ code: 0, stdout: "from outside answer\n", stderr: "" });
    const show = await runCli(["sessions", "show", "cli:direct"], { TROUPE_HOME: dir });
    expect(show.code).toBe(0);
    expect(show.stdout).toContain("user: from outside");
    const status = await runCli(["daemon", "status"], { TROUPE_HOME: dir });
    expect(status.code).toBe(3);
    expect(status.stdout).toMatch(/^troupe daemon is not running; troupe agent \(pid \d+\) runs in-process and lends the store/);

    home = dir;
    const start = await runCli(["daemon", "start"], { TROUPE_HOME: dir });
    expect(start.stderr).toBe("");
    expect(start.code).toBe(0);
    const pid = Number(/troupe daemon started \(pid (\d+)\)/.exec(start.stdout)?.[1]);
    await pty.waitFor("handing this chat over to the daemon");
    await pty.waitFor(`reconnected to the daemon, pid ${pid}`);
    expect(existsSync(join(dir, "agent.json"))).toBe(false);
    pty.type("after\r");
    await pty.waitFor("after answer");
    await pty.waitFor("you> ");
    pty.type("\x04");
    expect(await pty.exited).toBe(0);

    const after = await runCli(["sessions", "show", "cli:direct"], { TROUPE_HOME: dir });
    expect(after.stdout.split("\n").filter((l) => l.startsWith("  user:"))).toEqual(["  user: hello", "  user: from outside", "  user: after"]);
    expect(fake.requests.map(typed)).toEqual(["hello", "from outside", "after"]);
    expect(pty.screen()).not.toMatch(/holds|error:/);
  }, 240_000);

  it("agent -m while another runs in-process goes through it: on another session at once, on the same one after it", async () => {
    const { dir, release, model } = await gatedHome();
    const first = runCli(["agent", "-m", "first"], { TROUPE_HOME: dir });
    await until(() => fake!.requests.length >= 1, 30_000, "the first model call");
    // The first holds the store until released: another session's message is answered through it meanwhile.
    expect(await runCli(["agent", "-m", "elsewhere", "-s", "cli:other"], { TROUPE_HOME: dir })).toMatchObject({ code: 0, stdout: "elsewhere answer\n", stderr: "" });
    const same = runCli(["agent", "-m", "second"], { TROUPE_HOME: dir });
    const log = join(dir, "logs", "troupe.log");
    await until(async () => (await readFile(log, "utf8")).split("message from another troupe command").length === 3, 30_000, "the second message to reach the first process");
    expect(model.requests.map(typed)).toEqual(["first", "elsewhere"]);
    release();
    const one = await first;
    expect(one).toMatchObject({ code: 0, stdout: "first answer\n" });
    // It waits, before it exits, for what the others sent through it, and says so.
    expect(one.stderr).toMatch(/^(\(answering a message sent through this process before exiting…\)\n)?$/);
    expect(await same).toMatchObject({ code: 0, stdout: "second answer\n", stderr: "" });
    expect(model.requests.map(typed)).toEqual(["first", "elsewhere", "second"]);
    const show = await runCli(["sessions", "show", "cli:direct"], { TROUPE_HOME: dir });
    expect(show.stdout.split("\n").filter((l) => l.startsWith("  user:"))).toEqual(["  user: first", "  user: second"]);
  }, 180_000);

  it("a command that finds the store held before its holder lends it waits for it, and goes through it", async () => {
    const { dir, release } = await gatedHome();
    // The holder lends the store 6 s after it opened it: sessions and agent -m start before that.
    const first = runCli(["agent", "-m", "first"], { TROUPE_HOME: dir, TROUPE_LEND_AFTER_MS: "6000" });
    await until(() => fake!.requests.length >= 1, 30_000, "the first model call");
    expect(existsSync(join(dir, "agent.json"))).toBe(false);
    const list = runCli(["sessions", "list"], { TROUPE_HOME: dir });
    const other = runCli(["agent", "-m", "elsewhere", "-s", "cli:other"], { TROUPE_HOME: dir });
    expect(await list).toMatchObject({ code: 0, stderr: "" });
    expect(await other).toMatchObject({ code: 0, stdout: "elsewhere answer\n", stderr: "" });
    release();
    expect(await first).toMatchObject({ code: 0, stdout: "first answer\n" });
    const show = await runCli(["sessions", "show", "cli:other"], { TROUPE_HOME: dir });
    expect(show.stdout).toContain("user: elsewhere");
  }, 180_000);

  for (const command of [["agent", "-m", "second", "-s", "cli:other"], ["sessions", "list"], ["daemon", "start"]]) {
    it(`${command.join(" ")} takes the store once a holder that never lent it lets go`, async () => {
      const { dir, release } = await gatedHome();
      // The holder would lend the store a minute in: it ends (and lets go) long before that.
      const first = runCli(["agent", "-m", "first"], { TROUPE_HOME: dir, TROUPE_LEND_AFTER_MS: "60000" });
      await until(() => fake!.requests.length >= 1, 30_000, "the first model call");
      if (command[0] === "daemon") home = dir;
      const second = runCli(command, { TROUPE_HOME: dir });
      // Time for the second command to find the store locked and nobody serving (it has nothing to show
      // for it); then the holder answers and exits. Had the second started after that, it would open
      // the store at once: the test cannot fail for its timing, only miss the case it is about.
      await new Promise((r) => setTimeout(r, 2_000));
      release();
      expect(await first).toMatchObject({ code: 0, stdout: "first answer\n" });
      const r = await second;
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      if (command[0] === "agent") expect(r.stdout).toBe("second answer\n");
      if (command[0] === "sessions") expect(r.stdout).toMatch(/^cli:direct +1 /m);
    }, 120_000);
  }

  it("a message answered before its process would lend the store never serves, and the process exits at once", async () => {
    fake = await startFakeOpenAi([], (req) => ({ content: `${typed(req)} answer` }));
    const dir = await tmp();
    await writeHome(dir, fake.url, { config: { gateway: { port: 0 } } });
    const created: string[] = [];
    const watcher = watch(dir, (_event, name) => name && created.push(name));
    try {
      const started = Date.now();
      // Lending would start a minute in: the exit must not wait for it.
      const run = await runCli(["agent", "-m", "quick"], { TROUPE_HOME: dir, TROUPE_LEND_AFTER_MS: "60000" });
      expect(run).toMatchObject({ code: 0, stdout: "quick answer\n", stderr: "" });
      expect(Date.now() - started).toBeLessThan(50_000);
    } finally {
      watcher.close();
    }
    expect(created).not.toContain("agent.json");
    expect(await readFile(join(dir, "logs", "troupe.log"), "utf8")).not.toContain("could not serve the control API");
  }, 120_000);

  it("a chat through another troupe agent goes on in-process once that agent exits", async () => {
    fake = await startFakeOpenAi([], (req) => ({ content: `${typed(req)} answer` }));
    const dir = await tmp();
    await writeHome(dir, fake.url, { config: { gateway: { port: 0 } } });
    pty = spawnPty("agent", { TROUPE_HOME: dir });
    await pty.waitFor("(in-process)");
    await pty.waitFor("you> ");
    await until(() => existsSync(join(dir, "agent.json")), 30_000, "agent.json");
    pty2 = spawnPty("agent", { TROUPE_HOME: dir });
    await pty2.waitFor(/through troupe agent pid \d+, which holds the store/);
    await pty2.waitFor("you> ");
    pty2.type("hi\r");
    await pty2.waitFor("hi answer");
    await pty2.waitFor("you> ");
    pty.type("\x04");
    expect(await pty.exited).toBe(0);
    pty2.type("later\r");
    await pty2.waitFor("which lent the store, has exited; this chat goes on in-process");
    await pty2.waitFor("later answer");
    await pty2.waitFor("you> ");
    pty2.type("\x04");
    expect(await pty2.exited).toBe(0);
    expect(fake.requests.map(typed)).toEqual(["hi", "later"]);
    const show = await runCli(["sessions", "show", "cli:direct"], { TROUPE_HOME: dir });
    expect(show.stdout.split("\n").filter((l) => l.startsWith("  user:"))).toEqual(["  user: hi", "  user: later"]);
    expect(pty2.screen()).not.toMatch(/error:/);
  }, 180_000);
});
