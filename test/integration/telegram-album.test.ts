import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Daemon } from "../../src/daemon-types.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { startFakeTelegram, type FakeTelegram } from "../fixtures/fake-telegram.js";
import { startTelegramDaemon } from "../helpers/daemon.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { useTempDirs } from "../helpers/tmp.js";
import { sleep, until } from "../helpers/wait.js";

const TOKEN = "123:TEST";
const alice = { id: 42, username: "alice" };
type Part = { type: string; text?: string; image_url?: { url: string } };

/** One item of album `group` in a message: a photo (the largest size last, as Telegram sends them). */
const albumPhoto = (group: string, fileId: string) => ({ media_group_id: group, photo: [{ file_id: `${fileId}-small`, file_unique_id: "s", width: 1, height: 1 }, { file_id: fileId, file_unique_id: `u${fileId}`, width: 9, height: 9 }] });

// Telegram sends an album (a media group: photos sent together) as one update per item, each with
// the same media_group_id and the caption on one of them, often across two getUpdates answers. As
// nanobot does, troupe takes an album in as one message: one turn, one reply that sees every photo.
describe("Telegram: an album (media group) is one message", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let tg: FakeTelegram | undefined;
  let daemon: Daemon | undefined;
  closeAfterEach(() => [daemon, fake, tg]);

  async function start(files: string[]) {
    fake = await startFakeOpenAi([], () => ({ content: "answered" }));
    tg = await startFakeTelegram(TOKEN);
    for (const id of files) tg.addFile(id, `photos/${id}.jpg`, Buffer.from(`JPEG-${id}`));
    const home = await tmp();
    daemon = await startTelegramDaemon(home, fake.url, tg, { allowFrom: ["alice"] });
    return { tg, fake, home, daemon };
  }

  /** The user message (the last one) of each model request, and the images in one (their bytes as text). */
  const userParts = (f: FakeOpenAi) => f.requests.map((r) => r.body.messages.at(-1)?.content as Part[] | string);
  const imagesOf = (content: Part[] | string | undefined) => (Array.isArray(content) ? content.filter((p) => p.type === "image_url").map((p) => Buffer.from(p.image_url!.url.split(",")[1]!, "base64").toString()) : []);

  it("an album of 3 photos with a caption, split across two getUpdates answers: one turn, one reply, the model sees 3 images and the caption", async () => {
    const { tg: bot, fake: model, home } = await start(["p1", "p2", "p3"]);
    bot.message("", alice, { id: 42, type: "private" }, { ...albumPhoto("g1", "p1"), caption: "three views of the garden" });
    bot.message("", alice, { id: 42, type: "private" }, albumPhoto("g1", "p2"));
    bot.holdNext(1);
    const lastId = bot.message("", alice, { id: 42, type: "private" }, albumPhoto("g1", "p3"));
    await until(() => bot.sent()[0], 15_000, "the reply");
    // Long enough for a second turn's reply, were the album taken in as several messages.
    await sleep(1_500);
    // Telegram did split it: the first answer had two of the three.
    expect(bot.calls.flatMap((c) => (c.answered ? [c.answered.updates] : []))[0]).toBe(2);
    expect(bot.sent()).toHaveLength(1);
    expect(model.requests).toHaveLength(1);
    const content = userParts(model)[0];
    expect(imagesOf(content)).toEqual(["JPEG-p1", "JPEG-p2", "JPEG-p3"]);
    const text = (content as Part[]).at(-1)!.text!;
    expect(text).toContain("three views of the garden");
    for (const id of ["p1", "p2", "p3"]) expect(text).toContain(`[image: ${join(home, `media/telegram/u${id}.jpg`)}]`);
    // The offset moved past all three once they were in.
    const polls = bot.calls.filter((c) => c.method === "getUpdates");
    expect(polls.at(-1)!.body.offset).toBe(lastId + 1);
  });

  it("an album's files are downloaded side by side, and reach the model in the album's order", async () => {
    const { tg: bot, fake: model } = await start(["r1", "r2", "r3"]);
    bot.setFileLatency(300);
    for (const id of ["r1", "r2", "r3"]) bot.message("", alice, { id: 42, type: "private" }, albumPhoto("g3", id));
    await until(() => model.requests[0], 15_000, "the album's turn");
    expect(bot.mostDownloadsAtOnce()).toBe(3);
    expect(imagesOf(userParts(model)[0])).toEqual(["JPEG-r1", "JPEG-r2", "JPEG-r3"]);
  });

  it("an album beside a text message from another chat: each answered once, the album as one message", async () => {
    const { tg: bot, fake: model, daemon: d } = await start(["q1", "q2"]);
    const received: Array<{ chatId: string; content: string }> = [];
    d.bus.ofType("inbound").subscribe((e) => received.push({ chatId: e.chatId, content: e.content }));
    // One answer: the album's first item, another chat's text, the album's second item.
    bot.message("", alice, { id: 42, type: "private" }, { ...albumPhoto("g2", "q1"), caption: "both of these" });
    bot.message("hello from 43", alice, { id: 43, type: "private" });
    const lastId = bot.message("", alice, { id: 42, type: "private" }, albumPhoto("g2", "q2"));
    await until(() => (bot.sent().length >= 2 ? true : undefined), 15_000, "both replies");
    await sleep(1_500);
    expect(bot.sent().map((s) => s.chat_id).sort()).toEqual(["42", "43"]);
    expect(received.map((r) => r.chatId).sort()).toEqual(["42", "43"]);
    expect(received.find((r) => r.chatId === "43")?.content).toBe("hello from 43");
    const album = userParts(model).find((c) => imagesOf(c).length);
    expect(imagesOf(album)).toEqual(["JPEG-q1", "JPEG-q2"]);
    expect((album as Part[]).at(-1)!.text).toContain("both of these");
    expect(model.requests).toHaveLength(2);
    expect(bot.calls.filter((c) => c.method === "getUpdates").at(-1)!.body.offset).toBe(lastId + 1);
  });
});
