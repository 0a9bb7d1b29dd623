import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Daemon } from "../../src/daemon-types.js";
import { listSessions } from "../../src/store/sessions.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { BOT, startFakeTelegram, type FakeTelegram } from "../fixtures/fake-telegram.js";
import { startTelegramDaemon } from "../helpers/daemon.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";

const TOKEN = "123:TEST";
const alice = { id: 42, username: "alice" };
const privateChat = { id: 42, type: "private" };

// What nanobot puts in a turn beside a Telegram message's own text (its test_telegram_channel.py
// cases, end to end here against a fake Bot API): the message replied to, a location, a video.
describe("Telegram: a message's context reaches the turn as nanobot puts it", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let tg: FakeTelegram | undefined;
  let daemon: Daemon | undefined;
  closeAfterEach(() => [daemon, fake, tg]);

  async function start() {
    fake = await startFakeOpenAi([], () => ({ content: "answered" }));
    tg = await startFakeTelegram(TOKEN);
    const home = await tmp();
    daemon = await startTelegramDaemon(home, fake.url, tg);
    return home;
  }
  /** The text of the user message of the n-th model request (the part after the runtime context). */
  const asked = async (n: number) => {
    await until(() => fake!.requests[n]);
    const content = fake!.requests[n]!.body.messages.at(-1)!.content;
    const text = typeof content === "string" ? content : (content as Array<{ type: string; text?: string }>).filter((p) => p.type === "text").at(-1)!.text!;
    return text.replace(/^[\s\S]*\[\/Runtime Context\]\n\n/, "");
  };

  it("quotes the message replied to, naming its writer; the bot's own as 'bot'", async () => {
    await start();
    tg!.message("translate this", alice, privateChat, { reply_to_message: { message_id: 2, chat: privateChat, from: { id: 1, is_bot: false, first_name: "" }, date: 0, text: "Hello" } });
    expect(await asked(0)).toBe("[Reply to: Hello]\ntranslate this");
    tg!.message("why?", alice, privateChat, { reply_to_message: { message_id: 3, chat: privateChat, from: BOT, date: 0, text: "It is 42." } });
    expect(await asked(1)).toBe("[Reply to bot: It is 42.]\nwhy?");
  });

  it("attaches the photo of the message replied to, quoting its caption; without a caption the tag names the file", async () => {
    const home = await start();
    tg!.addFile("cat", "photos/cat.jpg", Buffer.from("JPEGCAT"));
    const photo = [{ file_id: "cat", file_unique_id: "ucat", width: 9, height: 9 }];
    tg!.message("what breed is this?", alice, privateChat, { reply_to_message: { message_id: 7, chat: privateChat, date: 0, caption: "A cute cat", photo } });
    expect(await asked(0)).toBe("[Reply to: A cute cat]\nwhat breed is this?");
    const parts = fake!.requests[0]!.body.messages.at(-1)!.content as Array<{ type: string; image_url?: { url: string } }>;
    expect(parts.find((p) => p.type === "image_url")?.image_url?.url).toBe(`data:image/jpeg;base64,${Buffer.from("JPEGCAT").toString("base64")}`);
    tg!.message("and this one?", alice, privateChat, { reply_to_message: { message_id: 8, chat: privateChat, date: 0, photo } });
    expect(await asked(1)).toBe(`[Reply to: [image: ${join(home, "media/telegram/ucat.jpg")}]]\nand this one?`);
  });

  it("a replied-to file that cannot be downloaded adds no tag and no file", async () => {
    await start();
    tg!.message("what is this?", alice, privateChat, { reply_to_message: { message_id: 9, chat: privateChat, date: 0, photo: [{ file_id: "gone", file_unique_id: "ugone", width: 1, height: 1 }] } });
    expect(await asked(0)).toBe("what is this?");
  });

  it("a location is [location: lat, lon], after the text when there is one", async () => {
    await start();
    tg!.message("", alice, privateChat, { location: { latitude: 48.8566, longitude: 2.3522 } });
    expect(await asked(0)).toBe("[location: 48.8566, 2.3522]");
    tg!.message("meet me here", alice, privateChat, { location: { latitude: 51.5074, longitude: -0.1278 } });
    expect(await asked(1)).toBe("meet me here\n[location: 51.5074, -0.1278]");
  });

  it("a video, a video note and an animation are downloaded and named, not dropped", async () => {
    const home = await start();
    tg!.addFile("v1", "videos/v.mp4", Buffer.from("MP4"));
    tg!.addFile("n1", "video_notes/n.mp4", Buffer.from("MP4N"));
    tg!.addFile("g1", "animations/g.mp4", Buffer.from("GIF"));
    tg!.message("", alice, privateChat, { caption: "watch", video: { file_id: "v1", file_unique_id: "uv1", width: 1, height: 1, duration: 1 } });
    expect(await asked(0)).toBe(`watch\n[video: ${join(home, "media/telegram/uv1.mp4")}]`);
    tg!.message("", alice, privateChat, { video_note: { file_id: "n1", file_unique_id: "un1", length: 1, duration: 1 } });
    expect(await asked(1)).toBe(`[video: ${join(home, "media/telegram/un1.mp4")}]`);
    tg!.message("", alice, privateChat, { animation: { file_id: "g1", file_unique_id: "ug1", width: 1, height: 1, duration: 1 } });
    expect(await asked(2)).toBe(`[animation: ${join(home, "media/telegram/ug1.mp4")}]`);
  });

  it("a forum topic is a session of its own, answered in its topic (nanobot's telegram:<chat>:topic:<thread>)", async () => {
    await start();
    const forum = { id: -100123, type: "supergroup", is_forum: true };
    tg!.message("@troupe_bot remember the word apple", alice, forum, { message_thread_id: 42, is_topic_message: true });
    await until(() => tg!.sent()[0]);
    tg!.message("@troupe_bot which word?", alice, forum, { message_thread_id: 43, is_topic_message: true });
    await until(() => tg!.sent()[1]);
    expect(tg!.sent().map((b) => [b.chat_id, b.message_thread_id])).toEqual([
      ["-100123", 42],
      ["-100123", 43],
    ]);
    // Topic 43 knows nothing of topic 42's conversation.
    expect(JSON.stringify(fake!.requests[1]!.body.messages)).not.toContain("apple");
    expect(tg!.calls.filter((c) => c.method === "sendChatAction").every((c) => [42, 43].includes(c.body.message_thread_id as number))).toBe(true);
    const keys = (await listSessions(daemon!.store)).map((m) => m.key);
    expect(keys).toEqual(expect.arrayContaining(["telegram:-100123:topic:42", "telegram:-100123:topic:43"]));
  });

  it("/history, /skill and Telegram's /dream_log answer as nanobot's commands, and the menu lists them", async () => {
    await start();
    tg!.message("list the files", alice, privateChat);
    await until(() => tg!.sent()[0]);
    tg!.message("/history 5", alice, privateChat);
    tg!.message("/skill", alice, privateChat);
    tg!.message("/dream_log", alice, privateChat);
    const [history, skills, dreamLog] = await until(() => (tg!.sent().length >= 4 ? tg!.sent().slice(1).map((b) => String(b.text)) : undefined));
    expect(history).toBe("Last 2 message(s):\n👤 You: list the files\n🤖 Bot: answered");
    expect(skills).toMatch(/^Available skills \(\d+\):\n\n• <b>\w/);
    expect(skills).toContain("<b>weather</b> — ");
    // Telegram commands cannot hold a hyphen: /dream_log is nanobot's alias of /dream-log.
    expect(dreamLog).not.toContain("answered");
    expect(fake!.requests).toHaveLength(1);
    const menu = (tg!.calls.find((c) => c.method === "setMyCommands")!.body.commands as Array<{ command: string }>).map((c) => c.command);
    expect(menu).toEqual(expect.arrayContaining(["history", "skill", "dream", "dream_log", "dream_restore"]));
  });
});

