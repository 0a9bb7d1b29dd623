import { describe, expect, it } from "vitest";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { startFakeTelegram, type FakeTelegram } from "../fixtures/fake-telegram.js";
import { telegramOn, writeHome, writeTelegramHome } from "../helpers/daemon.js";
import { getJson, startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { sleep, until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";

const TOKEN = "123:E2E";

interface SessionDetail {
  messages: Array<{ role: string; content: string | null }>;
  turns: Array<{ state: string }>;
}

describe("Telegram across kill -9 (real gateway, fake Bot API)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let tg: FakeTelegram | undefined;
  let gateway: GatewayProcess | undefined;
  closeAfterEach(() => [gateway, fake, tg]);

  it.each([
    // The update is in the inbox, the offset stored with it (one batch), the session not yet told: the restart finds it in the inbox.
    { fault: "after-inbox-write", offsetAfterRestart: 101 },
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

  it.each([
    // Fetched, not yet read or stored: nothing of the batch is in the store, the offset did not move, Telegram hands the same updates out again.
    { fault: "after-updates-fetched", stored: false },
    // The batch and its offset stored together, the sessions not yet told: the restart finds every message in the inbox, and getUpdates asks from past them.
    { fault: "after-inbox-write", stored: true },
  ])("a getUpdates batch killed at $fault: after restart each message is answered exactly once, in order within its chat", async ({ fault, stored }) => {
    // Answers the text of the last user message (its last line: the runtime context comes before it).
    fake = await startFakeOpenAi([], (req) => ({ content: `re: ${String(req.body.messages.findLast((m) => m.role === "user")?.content).split("\n").at(-1)}` }));
    tg = await startFakeTelegram(TOKEN);
    const home = await tmp();
    await writeTelegramHome(home, fake.url, tg);
    const polled = (n: number) => tg!.calls.filter((c) => c.method === "getUpdates").length >= n;
    gateway = await startGateway(home, { TROUPE_FAULT: fault });
    await until(() => polled(1) || undefined, 20_000, "the first poll");
    // One getUpdates answer: two messages in chat 42 (ids 9 and 10: "10" sorts before "9" as text), one in each of chats 43 to 45.
    const alice = { id: 42, username: "alice" };
    const ids = [
      tg.message("first", alice, { id: 42, type: "private" }, { message_id: 9 }),
      tg.message("second", alice, { id: 42, type: "private" }, { message_id: 10 }),
      ...[43, 44, 45].map((chat) => tg!.message(`hello from ${chat}`, alice, { id: chat, type: "private" })),
    ];
    expect((await gateway.exited).signal).toBe("SIGKILL");
    const pollsBefore = tg.calls.filter((c) => c.method === "getUpdates").length;

    const g = (gateway = await startGateway(home));
    for (const chat of [43, 44, 45]) await until(() => tg!.sent().some((s) => s.chat_id === String(chat)) || undefined, 20_000, `the answer in chat ${chat}`);
    const chat42 = await until(
      async () => {
        const s = await getJson<SessionDetail>(g, "/api/sessions/telegram:42");
        return s.turns.length && s.turns.every((t) => t.state === "responded") && s.messages.filter((m) => m.role === "user").length === 2 ? s : undefined;
      },
      20_000,
      "both messages of chat 42 answered",
    );
    await sleep(1_000);
    expect(tg.calls.filter((c) => c.method === "getUpdates")[pollsBefore]?.body.offset).toBe(stored ? ids.at(-1)! + 1 : undefined);
    expect(chat42.messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["first", "second"]);
    // One answer per turn in chat 42 (a message injected into a running turn shares its answer), one in each other chat.
    expect(tg.sent().filter((s) => s.chat_id === "42")).toHaveLength(chat42.turns.length);
    for (const chat of [43, 44, 45]) expect(tg.sent().filter((s) => s.chat_id === String(chat)).map((s) => s.text)).toEqual([`re: hello from ${chat}`]);
  });
  it("a streamed reply (nanobot's default) killed after its final edit, before its outbox record went: after restart it is not sent again", async () => {
    fake = await startFakeOpenAi([], (req) => ({ content: String(req.body.messages.findLast((m) => m.role === "user")?.content).endsWith("second?") ? "Second answer." : "Here is your answer." }));
    tg = await startFakeTelegram(TOKEN);
    const home = await tmp();
    await writeHome(home, fake.url, { config: { gateway: { port: 0 }, channels: { telegram: { ...telegramOn(tg), streaming: true } } } });
    gateway = await startGateway(home, { TROUPE_FAULT: "before-outbox-delete" });
    tg.message("what is the answer?");
    expect((await gateway.exited).signal).toBe("SIGKILL");
    gateway = await startGateway(home);
    // Replies go out in order: once the next message's reply is shown, a resend of the first would have been too.
    tg.message("second?");
    const shown = (text: string) => tg!.calls.filter((c) => ["sendMessage", "editMessageText"].includes(c.method) && c.body.text === text);
    await until(() => shown("Second answer.").length > 0, 20_000, "the second reply");
    const texts = tg.calls.filter((c) => ["sendMessage", "editMessageText"].includes(c.method)).map((c) => `${c.method}:${String(c.body.text)}`);
    expect(tg.calls.filter((c) => c.method === "sendMessage" && String(c.body.text).startsWith("Here")), texts.join(" | ")).toHaveLength(1);
  });

  it("an album killed at after-updates-fetched while it was still arriving: after restart it is answered once, as one message", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "Seen all three." }));
    tg = await startFakeTelegram(TOKEN);
    for (const id of ["p1", "p2", "p3"]) tg.addFile(id, `photos/${id}.jpg`, Buffer.from(`JPEG-${id}`));
    const home = await tmp();
    await writeTelegramHome(home, fake.url, tg);
    gateway = await startGateway(home, { TROUPE_FAULT: "after-updates-fetched" });
    await until(() => tg!.calls.some((c) => c.method === "getUpdates") || undefined, 20_000, "the first poll");
    // An album of three photos (the caption on the first) that Telegram splits: the first answer holds two.
    const photo = (id: string) => ({ media_group_id: "album-1", photo: [{ file_id: id, file_unique_id: `u${id}`, width: 9, height: 9 }] });
    tg.message("", undefined, undefined, { ...photo("p1"), caption: "all three" });
    tg.message("", undefined, undefined, photo("p2"));
    tg.holdNext(1);
    const third = tg.message("", undefined, undefined, photo("p3"));
    expect((await gateway.exited).signal).toBe("SIGKILL");
    const pollsBefore = tg.calls.filter((c) => c.method === "getUpdates").length;
    // Telegram splits the redelivery too: the restart's first answer again holds two of the three.
    tg.hold(third);

    gateway = await startGateway(home);
    await until(() => tg!.sent()[0], 20_000, "the album answered");
    await sleep(1_500);
    // Nothing of the album was stored before the kill: the restart fetched it again from the old offset; its first
    // answer held two of the three, and the album's second ask (the same offset) all three.
    expect(tg.calls.filter((c) => c.method === "getUpdates")[pollsBefore]?.body.offset).toBeUndefined();
    expect(tg.calls.filter((c) => c.method === "getUpdates").slice(pollsBefore).flatMap((c) => (c.answered ? [c.answered.updates] : [])).slice(0, 2)).toEqual([2, 3]);
    expect(tg.sent().map((s) => s.text)).toEqual(["Seen all three."]);
    expect(fake.requests).toHaveLength(1);
    const content = fake.requests[0]!.body.messages.at(-1)?.content as Array<{ type: string; text?: string; image_url?: { url: string } }>;
    const images = content.filter((p) => p.type === "image_url").map((p) => Buffer.from(p.image_url!.url.split(",")[1]!, "base64").toString());
    expect(images).toEqual(["JPEG-p1", "JPEG-p2", "JPEG-p3"]);
    expect(content.at(-1)?.text).toContain("all three");
  });
});
