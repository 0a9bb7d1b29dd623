import { describe, expect, it } from "vitest";
import { chatKeyOf, chatTarget, fileOf, locationLine, REPLY_QUOTE_CHARS, replyTag } from "../../src/channels/telegram-context.js";

// nanobot's cases (nanobot/channels/telegram/tests/test_telegram_channel.py: _extract_reply_context, locations).
describe("Telegram message context, as nanobot puts it in the turn", () => {
  it("names who wrote the message replied to: @username, else first name, else nobody; the bot as 'bot'", () => {
    expect(replyTag({ text: "Hello world", from: { id: 2, username: "testuser", first_name: "Test" } }, 999)).toBe("[Reply to @testuser: Hello world]");
    expect(replyTag({ caption: "Photo caption", from: { id: 2, first_name: "Test" } }, 999)).toBe("[Reply to Test: Photo caption]");
    expect(replyTag({ text: "Hello", from: { id: 1 } }, 999)).toBe("[Reply to: Hello]");
    expect(replyTag({ text: "earlier answer", from: { id: 999, username: "troupe_bot" } }, 999)).toBe("[Reply to bot: earlier answer]");
  });

  it("cuts the replied text at 4,000 characters, marking the cut", () => {
    const tag = replyTag({ text: "x".repeat(REPLY_QUOTE_CHARS + 100), from: { id: 2 } }, 999)!;
    expect(tag.startsWith("[Reply to: ")).toBe(true);
    expect(tag.endsWith("...]")).toBe(true);
    expect(tag.length).toBe("[Reply to: ]".length + REPLY_QUOTE_CHARS + "...".length);
  });

  it("without text, the replied message's file line is the tag; with neither there is none", () => {
    expect(replyTag({}, 999)).toBeUndefined();
    expect(replyTag({}, 999, "[image: /m/a.jpg]")).toBe("[Reply to: [image: /m/a.jpg]]");
    // Text wins over the file: the file is attached, the text quoted.
    expect(replyTag({ caption: "A cute cat" }, 999, "[image: /m/cat.jpg]")).toBe("[Reply to: A cute cat]");
  });

  it("a location is [location: lat, lon]", () => {
    expect(locationLine({ latitude: 48.8566, longitude: 2.3522 })).toBe("[location: 48.8566, 2.3522]");
    expect(locationLine({ latitude: 51.5074, longitude: -0.1278 })).toBe("[location: 51.5074, -0.1278]");
  });

  it("takes one file per message in nanobot's order: the largest photo, voice, audio, document, video, video note, animation", () => {
    expect(fileOf({ photo: [{ file_id: "small" }, { file_id: "large" }], document: { file_id: "d" } })).toMatchObject({ field: "photo", fileId: "large", label: "image" });
    expect(fileOf({ voice: { file_id: "v" }, audio: { file_id: "a" } })).toMatchObject({ field: "voice", label: "voice message" });
    expect(fileOf({ document: { file_id: "d", file_name: "report.pdf" } })).toMatchObject({ field: "document", name: "report.pdf", label: "file report.pdf" });
    expect(fileOf({ video: { file_id: "v1" } })).toMatchObject({ field: "video", name: "video.mp4", label: "video" });
    expect(fileOf({ video_note: { file_id: "n1" } })).toMatchObject({ field: "video_note", label: "video" });
    expect(fileOf({ animation: { file_id: "g1", file_name: "cat.gif.mp4" } })).toMatchObject({ field: "animation", name: "cat.gif.mp4", label: "animation" });
    expect(fileOf({})).toBeUndefined();
  });
});

// nanobot's _derive_topic_session_key cases: a topic's messages are a session of their own.
describe("Telegram forum topics", () => {
  it("keys a topic's chat as <chat>:topic:<thread> (nanobot's session key without telegram:), and sends back into it", () => {
    expect(chatKeyOf({ chat: { id: -100123, is_forum: true }, message_thread_id: 42, is_topic_message: true })).toBe("-100123:topic:42");
    expect(chatKeyOf({ chat: { id: 999 }, message_thread_id: 7, is_topic_message: true })).toBe("999:topic:7");
    for (const chat of [{ id: 123 }, { id: -100123, is_forum: true }]) expect(chatKeyOf({ chat })).toBe(String(chat.id));
    // A reply thread in an ordinary supergroup is not a topic.
    expect(chatKeyOf({ chat: { id: -100555 }, message_thread_id: 77 })).toBe("-100555");
    expect(chatTarget("-100123:topic:42")).toEqual({ chat: "-100123", thread: { message_thread_id: 42 } });
    expect(chatTarget("42")).toEqual({ chat: "42", thread: {} });
  });
});
