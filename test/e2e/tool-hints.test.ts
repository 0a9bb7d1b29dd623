import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { startFakeTelegram, type FakeTelegram } from "../fixtures/fake-telegram.js";
import { writeHome } from "../helpers/daemon.js";
import { startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";

const TOKEN = "123:HINTS";

/** Tool hints reach a Telegram chat as nanobot shows them (one line per model response), only with channels.sendToolHints. */
describe("tool hints on Telegram (real gateway, fake Bot API)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let tg: FakeTelegram | undefined;
  let gateway: GatewayProcess | undefined;
  afterEach(async () => {
    gateway?.proc.kill("SIGKILL");
    gateway = undefined;
    await fake?.close();
    await tg?.close();
  });

  const run = async (sendToolHints: boolean) => {
    fake = await startFakeOpenAi([], (req: { body: { messages: Array<{ role: string }> } }) =>
      req.body.messages.at(-1)?.role === "tool"
        ? { content: "Checked." }
        : { toolCalls: [{ name: "read_file", arguments: { path: "notes.txt" } }, { name: "grep", arguments: { pattern: "TODO|FIXME" } }] },
    );
    tg = await startFakeTelegram(TOKEN);
    const home = await tmp();
    await mkdir(join(home, "workspace"), { recursive: true });
    await writeFile(join(home, "workspace", "notes.txt"), "TODO: write tests\n");
    await writeHome(home, fake.url, {
      config: { gateway: { port: 0 }, channels: { sendToolHints, telegram: { enabled: true, token: TOKEN, apiRoot: tg.apiRoot, allowFrom: ["*"] } } },
    });
    gateway = await startGateway(home);
    tg.message("any todos?");
    await until(() => tg!.sent().some((s) => s.text === "Checked."), 30_000, "the reply");
    return tg.sent();
  };

  it("sendToolHints: one quoted line before the reply, abbreviated as nanobot does", async () => {
    const sent = await run(true);
    const hints = sent.filter((s) => String(s.text).startsWith("<blockquote"));
    expect(hints).toEqual([expect.objectContaining({ text: '<blockquote expandable>read notes.txt, grep "TODO|FIXME"</blockquote>', parse_mode: "HTML" })]);
    expect(sent.findIndex((s) => s === hints[0])).toBeLessThan(sent.findIndex((s) => s.text === "Checked."));
  });

  it("without sendToolHints (nanobot's default off): the reply only", async () => {
    const sent = await run(false);
    expect(sent.map((s) => s.text)).toEqual(["Checked."]);
  });
});
