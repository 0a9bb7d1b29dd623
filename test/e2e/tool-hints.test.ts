import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { startFakeTelegram, type FakeTelegram } from "../fixtures/fake-telegram.js";
import { writeTelegramHome } from "../helpers/daemon.js";
import { startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";

const TOKEN = "123:HINTS";

/**
 * nanobot's progress messages in a Telegram chat that does not stream: what the model said with its
 * tool calls (channels.sendProgress), then the calls as one abbreviated hint (channels.sendToolHints).
 */
describe("progress and tool hints on Telegram (real gateway, fake Bot API)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let tg: FakeTelegram | undefined;
  let gateway: GatewayProcess | undefined;
  closeAfterEach(() => [gateway, fake, tg]);

  const run = async (sendToolHints: boolean, sendProgress = true) => {
    fake = await startFakeOpenAi([], (req: { body: { messages: Array<{ role: string }> } }) =>
      req.body.messages.at(-1)?.role === "tool"
        ? { content: "Checked." }
        : { content: "Let me **look**.", toolCalls: [{ name: "read_file", arguments: { path: "notes.txt" } }, { name: "grep", arguments: { pattern: "TODO|FIXME" } }] },
    );
    tg = await startFakeTelegram(TOKEN);
    const home = await tmp();
    await mkdir(join(home, "workspace"), { recursive: true });
    await writeFile(join(home, "workspace", "notes.txt"), "TODO: write tests\n");
    await writeTelegramHome(home, fake.url, tg, { channels: { sendToolHints, sendProgress } });
    gateway = await startGateway(home);
    tg.message("any todos?");
    await until(() => tg!.sent().some((s) => s.text === "Checked."), 30_000, "the reply");
    return tg.sent();
  };

  it("sendProgress and sendToolHints: the model's words, then one quoted hint abbreviated as nanobot does, then the reply", async () => {
    const sent = await run(true);
    expect(sent.map((s) => [s.text, s.parse_mode])).toEqual([
      ["Let me <b>look</b>.", "HTML"],
      ['<blockquote expandable>read notes.txt, grep "TODO|FIXME"</blockquote>', "HTML"],
      ["Checked.", "HTML"],
    ]);
  });

  it("without sendToolHints (nanobot's default off): the model's words and the reply", async () => {
    const sent = await run(false);
    expect(sent.map((s) => s.text)).toEqual(["Let me <b>look</b>.", "Checked."]);
  });

  it("without sendProgress either: the reply only", async () => {
    const sent = await run(false, false);
    expect(sent.map((s) => s.text)).toEqual(["Checked."]);
  });
});
