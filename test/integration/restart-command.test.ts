import { describe, expect, it } from "vitest";
import { apiReplies } from "../../src/channels/api.js";
import type { RestartOrigin } from "../../src/restart-origin.js";
import type { Daemon } from "../../src/daemon-types.js";
import { sessionInbox } from "../../src/store/inbox.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { replyTo, sendApi as send, startDaemon } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";

/** /restart inside the daemon: its answer is durable before the restart is asked for; the next daemon says it is back. */
describe("/restart (in-process daemon)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let daemon: Daemon | undefined;
  closeAfterEach(() => [daemon, fake]);

  it("in a session that is idle, and in one whose turn runs: answered first, then the restart is asked for with the chat", async () => {
    fake = await startFakeOpenAi([{ content: "hello" }, { content: "slow", delayMs: 3_000 }]);
    const restarts: RestartOrigin[] = [];
    const dir = await tmp();
    daemon = await startDaemon(dir, fake.url, {}, { onRestart: (from) => restarts.push(from) });
    const d = daemon;
    // An idle session answers at once.
    expect((await replyTo(d, await send(d, "idle", "hi"))).content).toBe("hello");
    const asked = await send(d, "idle", "/restart");
    expect((await replyTo(d, asked)).content).toBe("Restarting…");
    await until(() => restarts.length === 1, 10_000, "the restart request");
    expect(restarts[0]).toMatchObject({ sessionKey: "api:idle", channel: "api", chatId: "idle" });
    // By then the /restart message is out of the inbox: the next daemon does not restart again.
    expect(await sessionInbox(d.store, "api:idle")).toEqual([]);

    // While a turn runs: answered at once, and the turn is left to resume after the restart.
    await send(d, "busy", "take your time");
    await until(() => fake!.requests.length === 2, 10_000, "the slow call");
    const during = await send(d, "busy", "/restart");
    expect((await replyTo(d, during)).content).toBe("Restarting… The running turn continues after the restart.");
    await until(() => restarts.length === 2, 10_000, "the second restart request");
  });

  it("the daemon a restart started tells that chat it is back", async () => {
    fake = await startFakeOpenAi([]);
    const at = Date.now() - 2_500;
    daemon = await startDaemon(await tmp(), fake.url, {}, { restartedFrom: { sessionKey: "api:ops", channel: "api", chatId: "ops", at } });
    // Queued while the daemon starts, delivered to the chat's mailbox by the API channel.
    const d = daemon;
    const notice = await until(async () => (await apiReplies(d.store, "ops"))[0], 20_000, "the notice");
    expect(notice.content).toMatch(/^Restart completed in \d+\.\ds\.$/);
    expect(Number(/in ([\d.]+)s/.exec(notice.content)![1])).toBeGreaterThanOrEqual(2.5);
  });

  it("without a daemon to restart (troupe agent in process), /restart says so", async () => {
    fake = await startFakeOpenAi([]);
    daemon = await startDaemon(await tmp(), fake.url);
    const reply = await replyTo(daemon, await send(daemon, "x", "/restart"));
    expect(reply.content).toMatch(/^\/restart restarts the daemon \(troupe gateway\); this chat runs in its own process/);
  });
});
