import { describe, expect, it } from "vitest";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { startFakeTelegram, type FakeTelegram } from "../fixtures/fake-telegram.js";
import { writeTelegramHome } from "../helpers/daemon.js";
import { startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { sleep } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";

const TOKEN = "123:E2E";

describe("Telegram across kill -9 (real gateway, fake Bot API)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let tg: FakeTelegram | undefined;
  let gateway: GatewayProcess | undefined;
  closeAfterEach(() => [gateway, fake, tg]);

  it.each([
    // The update is in the inbox but the offset never moved: Telegram redelivers it, and the inbox drops the duplicate.
    { fault: "after-inbox-write", offsetAfterRestart: undefined },
    // The offset moved; the turn was interrupted at its model call and resumes from its checkpoint.
    { fault: "awaiting-model", offsetAfterRestart: 101 },
  ])("killed at $fault between receiving and replying: after restart the message is answered exactly once", async ({ fault, offsetAfterRestart }) => {
    fake = await startFakeOpenAi([], () => ({ content: "Here is your answer." }));
    tg = await startFakeTelegram(TOKEN);
    const home = await tmp();
    await writeTelegramHome(home, fake.url, tg);
    gateway = await startGateway(home, { TROUPE_FAULT: fault });
    const updateId = tg.message("what is the answer?");
    expect(updateId).toBe(100);
    expect((await gateway.exited).signal).toBe("SIGKILL");
    const pollsBefore = tg.calls.filter((c) => c.method === "getUpdates").length;

    gateway = await startGateway(home);
    const deadline = Date.now() + 15_000;
    while (!tg.sent().some((s) => s.text === "Here is your answer.") && Date.now() < deadline) await sleep(100);
    await sleep(1_000);
    expect(tg.calls.filter((c) => c.method === "getUpdates")[pollsBefore]?.body.offset).toBe(offsetAfterRestart);
    expect(tg.sent().filter((s) => s.text === "Here is your answer.")).toHaveLength(1);
    expect(tg.sent()).toHaveLength(1);
  });
});
