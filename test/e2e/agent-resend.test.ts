import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startFakeOpenAi, type FakeOpenAi, type RecordedRequest } from "../fixtures/fake-openai.js";
import { runCli } from "../helpers/cli.js";
import { writeHome } from "../helpers/daemon.js";
import { closeAfterEach, detachedDaemon } from "../helpers/teardown.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { openStore } from "../../src/store/store.js";
import { outboxPutOp } from "../../src/store/outbox.js";

const typed = (req: RecordedRequest) => String(req.body.messages.findLast((m) => m.role === "user")?.content).split("\n").at(-1);
const userLines = (show: string) => show.split("\n").filter((l) => l.startsWith("  user:"));

describe("a message is answered once across a daemon stop (real processes)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let home: string | undefined;
  closeAfterEach(() => [detachedDaemon(home), fake]);

  it("agent -m X through a daemon that stops, then agent -m Y in-process: X's resumed turn answers X, and the X client, re-sending X through Y's lent API, gets that answer; X is asked and stored once", async () => {
    const dir = await tmp();
    const log = join(dir, "logs", "troupe.log");
    let xCalls = 0;
    fake = await startFakeOpenAi([], async (req) => {
      const text = typed(req);
      if (text === "question X") {
        // The daemon is stopped under its first call; the in-process agent's resume asks again.
        xCalls += 1;
        return xCalls === 1 ? { stall: "headers" } : { content: xCalls === 2 ? "X answer" : "X answered twice" };
      }
      // Y is answered once the X client has sent X again through Y's process (its lent control API).
      await until(async () => (await readFile(log, "utf8")).includes("message from another troupe command"), 60_000, "X sent again through the agent");
      return { content: `${text} answer` };
    });
    await writeHome(dir, fake.url, { config: { gateway: { port: 0 } } });
    home = dir;
    expect(await runCli(["daemon", "start"], { TROUPE_HOME: dir })).toMatchObject({ code: 0, stderr: "" });
    const x = runCli(["agent", "-m", "question X"], { TROUPE_HOME: dir });
    await until(() => xCalls >= 1, 30_000, "X's model call in the daemon");
    expect(await runCli(["daemon", "stop"], { TROUPE_HOME: dir })).toMatchObject({ code: 0 });

    const y = await runCli(["agent", "-m", "question Y"], { TROUPE_HOME: dir });
    expect(y.stdout).toBe("question Y answer\n");
    expect(y.stderr).toMatch(/\(the interrupted turn's reply:\)\nX answer\n/);
    const xr = await x;
    expect(xr.stdout).toBe("X answer\n");
    expect(xr.code).toBe(0);
    expect(xr.stderr).toMatch(/connected to troupe agent, pid \d+/);
    expect(fake.requests.map(typed)).toEqual(["question X", "question X", "question Y"]);
    const show = await runCli(["sessions", "show", "cli:direct"], { TROUPE_HOME: dir });
    expect(userLines(show.stdout)).toEqual(["  user: question X", "  user: question Y"]);

    // The daemon, started again, finds X answered and delivered: it asks nothing again.
    expect(await runCli(["daemon", "start"], { TROUPE_HOME: dir })).toMatchObject({ code: 0 });
    const again = await runCli(["agent", "-m", "after"], { TROUPE_HOME: dir });
    expect(again.stdout).toBe("after answer\n");
    expect(fake.requests.map(typed)).toEqual(["question X", "question X", "question Y", "after"]);
  }, 240_000);

  it("agent -m prints on stdout only its own reply: what the message tool sent to the chat in a run that stopped before printing it goes to stderr, labelled", async () => {
    fake = await startFakeOpenAi([], (req) => ({ content: `${typed(req)} answer` }));
    const dir = await tmp();
    await writeHome(dir, fake.url);
    // An earlier in-process run queued a message-tool send to the terminal and stopped before printing it.
    const store = await openStore(join(dir, "store"));
    try {
      const at = Date.now();
      await store.batch([outboxPutOp({ deliveryId: "earlier-send", channel: "cli", chatId: "direct", content: "note from before", media: [], answers: [], createdAt: at, attempts: 0 })], { sync: true });
    } finally {
      await store.close();
    }
    const r = await runCli(["agent", "-m", "hello"], { TROUPE_HOME: dir });
    expect(r).toMatchObject({ code: 0, stdout: "hello answer\n" });
    expect(r.stderr).toBe("(sent to this chat by an earlier turn:)\nnote from before\n");
    // Printed once: the next run has nothing left of it.
    expect(await runCli(["agent", "-m", "again"], { TROUPE_HOME: dir })).toMatchObject({ code: 0, stdout: "again answer\n", stderr: "" });
  }, 120_000);
});
