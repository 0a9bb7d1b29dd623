import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { startFakeTelegram, type FakeTelegram } from "../fixtures/fake-telegram.js";
import { writeTelegramHome } from "../helpers/daemon.js";
import { startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";

const TOKEN = "123:E2E";

/** Telegram while the store cannot write (issue 23): the update stays unacknowledged, Telegram redelivers it, it is answered once. */
describe("a Telegram message while the disk is full (real gateway, fake Bot API, ENOSPC injected)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let tg: FakeTelegram | undefined;
  let gateway: GatewayProcess | undefined;
  closeAfterEach(() => [gateway, fake, tg]);

  it("leaves the update unacknowledged while failing, then takes it and answers it once", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "Stored and answered." }));
    tg = await startFakeTelegram(TOKEN);
    const home = await tmp();
    const flag = join(home, "disk-full.flag");
    await writeTelegramHome(home, fake.url, tg, { storage: { probeMaxSeconds: 1 } });
    const g = (gateway = await startGateway(home, { TROUPE_FAULT_DISK_FULL: flag }));
    const polls = () => tg!.calls.filter((c) => c.method === "getUpdates");
    await until(() => polls().length >= 1, 20_000, "the first poll");

    await writeFile(flag, "");
    const before = polls().length;
    const updateId = tg.message("remember this");
    // Handed out by a poll, refused by the store, not acknowledged: later polls still ask from before it.
    await until(() => polls().length >= before + 2, 30_000, "two polls after the update");
    expect(polls().map((c) => c.body.offset ?? null)).toEqual(polls().map(() => null));
    expect(tg.sent()).toHaveLength(0);
    expect((await fetch(`${g.url}/health`)).status).toBe(503);

    await rm(flag);
    await until(() => tg!.sent().some((s) => s.text === "Stored and answered."), 60_000, "the answer after the store recovered");
    await until(() => polls().some((c) => c.body.offset === updateId + 1), 60_000, "the offset to move past the update");
    expect(tg.sent().filter((s) => s.text === "Stored and answered.")).toHaveLength(1);
  }, 180_000);
});
