import { readFile, writeFile } from "node:fs/promises";
import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Daemon } from "../../src/daemon-types.js";
import { pendingOutbox, queueDelivery } from "../../src/store/outbox.js";
import type { StoreOp } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { startFakeTelegram, telegramFuzzCase, type FakeTelegram } from "../fixtures/fake-telegram.js";
import { startFakeWeb } from "../fixtures/fake-web.js";
import { startDaemon, startTelegramDaemon } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { sleep, until } from "../helpers/wait.js";

const TOKEN = "123:TEST";

/** An OpenAI-compatible transcription endpoint that answers `text`; upload() is the raw body it was sent. */
async function fakeTranscription(text: string) {
  let upload = "";
  const speech = await startFakeWeb({
    "/v1/audio/transcriptions": (req, res) => {
      req.on("data", (c: Buffer) => (upload += c.toString("latin1")));
      req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ text })));
    },
  });
  return { speech, upload: () => upload };
}

describe("Telegram channel (fake Bot API on 127.0.0.1, in-process daemon)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let tg: FakeTelegram | undefined;
  let daemon: Daemon | undefined;
  afterEach(async () => {
    await daemon?.shutdown();
    await fake?.close();
    await tg?.close();
    daemon = undefined;
    tg = undefined;
  });

  async function start(telegram: Record<string, unknown> = {}, dir?: string, stream = false) {
    tg ??= await startFakeTelegram(TOKEN);
    const home = dir ?? (await tmp());
    // Replies read as sendMessage calls: streaming (the default) only where a test asks for it.
    // The daemon's token is TOKEN whatever the fake Bot API answers to (a test of a rejected token starts it with another).
    daemon = await startTelegramDaemon(home, fake!.url, tg, { token: TOKEN, allowFrom: ["alice"], ...telegram }, { stream });
    return home;
  }

  it("answers a message as Telegram HTML, registers the command menu, shows typing", async () => {
    fake = await startFakeOpenAi([{ content: "**Hello** Alice, `x < y`!", delayMs: 300 }]);
    await start();
    tg!.message("hi there");
    const sent = await until(() => tg!.sent()[0]);
    expect(sent).toMatchObject({ chat_id: "42", text: "<b>Hello</b> Alice, <code>x &lt; y</code>!", parse_mode: "HTML" });
    expect(tg!.calls.find((c) => c.method === "setMyCommands")?.body.commands).toEqual([
      { command: "new", description: "Start a new conversation" },
      { command: "stop", description: "Stop the running turn" },
      { command: "status", description: "Show session status" },
      { command: "history", description: "Show recent conversation messages" },
      { command: "skill", description: "List enabled skills" },
      { command: "dream", description: "Run Dream memory consolidation now" },
      { command: "dream_log", description: "Show the latest Dream memory change" },
      { command: "dream_restore", description: "Restore Dream memory to an earlier version" },
      { command: "dream_prompt", description: "Tell Dream how to organize memory" },
      { command: "restart", description: "Restart the bot" },
      { command: "help", description: "Show the commands" },
    ]);
    expect(tg!.calls.some((c) => c.method === "sendChatAction" && c.body.action === "typing")).toBe(true);
    const userMessage = fake!.requests[0]?.body.messages.at(-1)?.content;
    expect(String(userMessage)).toMatch(/Channel: telegram\nChat ID: 42\n\[\/Runtime Context\]\n\nhi there$/);
  });

  it("reacts to a message with channels.telegram.reactEmoji (👀 by default) once it is taken in, and takes the reaction back with the reply, as nanobot does", async () => {
    fake = await startFakeOpenAi([{ content: "one", delayMs: 300 }, { content: "two" }]);
    const home = await start({ streaming: true });
    tg!.message("hi there");
    await until(() => tg!.sent()[0]);
    const reactions = () => tg!.calls.filter((c) => c.method === "setMessageReaction");
    await until(() => reactions().length === 2);
    const messageId = reactions()[0]!.body.message_id;
    expect(messageId).not.toBe(tg!.calls.find((c) => c.method === "sendMessage")!.body.message_id);
    expect(reactions().map((c) => c.body)).toEqual([
      { chat_id: "42", message_id: messageId, reaction: [{ type: "emoji", emoji: "👀" }] },
      { chat_id: "42", message_id: messageId, reaction: [] },
    ]);
    // On while the turn ran: set before the reply was sent, taken back after.
    const order = tg!.calls.filter((c) => ["setMessageReaction", "sendMessage"].includes(c.method)).map((c) => (c.method === "sendMessage" ? "reply" : (c.body.reaction as unknown[]).length ? "on" : "off"));
    expect(order[0]).toBe("on");
    expect(order.indexOf("reply")).toBeLessThan(order.lastIndexOf("off"));
    await daemon!.shutdown();
    daemon = undefined;
    // reactEmoji "" reacts to nothing.
    const before = tg!.calls.length;
    await start({ reactEmoji: "", streaming: true }, home);
    tg!.message("again");
    // The reply shown (streamed into a draft and edited, or sent whole if it came before the draft).
    await until(() => tg!.calls.slice(before).some((c) => ["sendMessage", "editMessageText"].includes(c.method) && c.body.text === "two"));
    expect(tg!.calls.slice(before).filter((c) => c.method === "setMessageReaction")).toEqual([]);
  });

  it("takes the reaction back when the message tool sent the answer and the reply itself is not sent again", async () => {
    fake = await startFakeOpenAi([{ toolCalls: [{ name: "message", arguments: { content: "It is 42." } }] }, { content: "done" }]);
    await start();
    tg!.message("what is 6 x 7?");
    const reactions = () => tg!.calls.filter((c) => c.method === "setMessageReaction").map((c) => (c.body.reaction as unknown[]).length);
    await until(() => reactions().length === 2);
    expect(reactions()).toEqual([1, 0]);
    // The reaction goes once the turn's reply record is handled: by then a resend of "done" would have been made.
    expect(tg!.sent().map((b) => b.text)).toEqual(["It is 42."]);
  });

  it("streams a reply by editing one message, at most once a second, ending with the final HTML", async () => {
    const answer = "**Streaming** works: " + "tokens arrive one by one. ".repeat(6);
    fake = await startFakeOpenAi([{ content: answer, chunkDelayMs: 25 }]);
    await start({ streaming: true }, undefined, true);
    tg!.message("stream please");
    await until(() => tg!.calls.find((c) => c.method === "editMessageText" && c.body.parse_mode === "HTML"), 15_000);
    const opened = tg!.sent();
    expect(opened).toHaveLength(1);
    expect(String(opened[0]?.text).length).toBeLessThan(answer.length);
    const edits = tg!.calls.filter((c) => c.method === "editMessageText");
    const final = edits.at(-1)!;
    expect(final.body).toMatchObject({ parse_mode: "HTML", text: `<b>Streaming</b> works: ${"tokens arrive one by one. ".repeat(6).trimEnd()}` });
    // The drafts between the first message and the final edit came at most once a second.
    const drafts = edits.slice(0, -1).map((c) => c.at);
    for (let i = 1; i < drafts.length; i++) expect(drafts[i]! - drafts[i - 1]!).toBeGreaterThanOrEqual(950);
  });

  it("a streamed turn whose reply the message tool sent keeps its draft: the next turn streams into a message of its own", async () => {
    fake = await startFakeOpenAi([
      { content: "Telling you through the tool. ", chunkDelayMs: 20, toolCalls: [{ name: "message", arguments: { content: "sent by the tool" } }] },
      { content: "Done with the first.", chunkDelayMs: 20 },
      { content: "The second answer, streamed on its own.", chunkDelayMs: 20 },
    ]);
    await start({ streaming: true }, undefined, true);
    tg!.message("first");
    await until(() => tg!.sent().find((m) => m.text === "sent by the tool"), 15_000);
    await until(() => fake!.requests.length >= 2 && tg!.calls.some((c) => c.method === "editMessageText" && String(c.body.text).includes("Done with the first")), 15_000);
    const firstCalls = tg!.calls.length;
    tg!.message("second");
    await until(() => tg!.calls.slice(firstCalls).find((c) => c.method === "editMessageText" && c.body.parse_mode === "HTML"), 15_000);
    const second = tg!.calls.slice(firstCalls).filter((c) => c.method === "sendMessage" || c.method === "editMessageText");
    // Nothing of the first turn's draft is shown again, and the first turn's message is not overwritten.
    expect(second.filter((c) => /Telling you|Done with the first/.test(String(c.body.text)))).toEqual([]);
    const firstDraft = tg!.calls.find((c) => c.method === "editMessageText")!.body.message_id;
    expect(second.filter((c) => c.method === "editMessageText").map((c) => c.body.message_id)).not.toContain(firstDraft);
    expect(second.at(-1)!.body.text).toBe("The second answer, streamed on its own.");
  });

  it("ignores senders outside allowFrom, and in groups answers only when mentioned", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "ok" }));
    await start();
    tg!.message("let me in", { id: 7, username: "mallory" });
    tg!.message("chatter in the group", { id: 42, username: "alice" }, { id: -100, type: "supergroup" });
    tg!.message("@troupe_bot what time is it?", { id: 42, username: "alice" }, { id: -100, type: "supergroup" });
    const sent = await until(() => tg!.sent()[0]);
    await sleep(600);
    expect(tg!.sent()).toHaveLength(1);
    expect(sent.chat_id).toBe("-100");
    expect(fake!.requests).toHaveLength(1);
    expect(String(fake!.requests[0]?.body.messages.at(-1)?.content)).toMatch(/\n\nwhat time is it\?$/);
  });

  it("drops malformed and unexpected updates at once, each with a log line, and answers the next message without a stall", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "ok" }));
    const home = await start();
    // The baseline, in the same run: a message with nothing before it.
    let t0 = Date.now();
    tg!.message("first");
    await until(() => tg!.sent()[0]);
    const baseline = Date.now() - t0;
    const alice = { id: 42, is_bot: false, first_name: "a", username: "alice" };
    const chat = (id: number) => ({ id, type: "private" });
    const msg = (n: number, body: Record<string, unknown>) => ({ message_id: 900 + n, date: 0, ...body });
    const junk = [
      { message: msg(1, { from: alice, text: "no chat" }) },
      { message: msg(2, { from: alice, chat: null, text: "chat is null" }) },
      { message: msg(3, { from: { ...alice, username: 7 }, chat: chat(51), text: "a numeric username" }) },
      { message: msg(4, { from: { ...alice, username: { name: "alice" } }, chat: chat(52), text: "an object username" }) },
      { message: msg(5, { from: { ...alice, id: "42" }, chat: chat(53), text: "a string id" }) },
      { message: msg(6, { from: alice, chat: chat(54), sticker: { file_id: "s", file_unique_id: "s" } }) },
      { edited_message: msg(7, { from: alice, chat: chat(55), text: "edited" }) },
      { channel_post: msg(8, { chat: { id: -56, type: "channel", title: "c" }, text: "a post" }) },
      { callback_query: { id: "q", from: alice, chat_instance: "i", data: "d" } },
      { message: msg(9, { chat: chat(57), sender_chat: { id: -58, type: "channel", title: "c" }, text: "as a channel" }) },
      { message: null },
    ];
    const junkIds = junk.map((u) => tg!.update(u));
    t0 = Date.now();
    const last = tg!.message("after the junk");
    await until(() => tg!.sent()[1], 20_000, "the message after the junk to be answered");
    const latency = Date.now() - t0;
    expect(latency, `answered ${latency} ms after ${junk.length} malformed updates (baseline ${baseline} ms)`).toBeLessThan(3_000);
    // Only alice's two good messages were answered; the offset moved past everything.
    expect(tg!.sent().map((s) => s.chat_id)).toEqual(["42", "42"]);
    await until(() => tg!.calls.some((c) => c.method === "getUpdates" && c.body.offset === last + 1), 5_000, "the offset past the last update");
    const log = (await readFile(join(home, "logs/troupe.log"), "utf8"))
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { msg: string; updateId?: number });
    expect(log.filter((l) => /update dropped/.test(l.msg)).map((l) => l.updateId)).toEqual(junkIds);
    expect(log.filter((l) => /backing off/.test(l.msg))).toEqual([]);
  });

  it("fuzz (seeded): no sender outside allowFrom is ever answered, and polling never stalls", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "ok" }));
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const { allowFrom, updates } = telegramFuzzCase(seed, 40);
      const what = `seed ${seed}, allowFrom ${JSON.stringify(allowFrom)}`;
      tg = await startFakeTelegram(TOKEN);
      await start({ allowFrom });
      // What the channel took in: a message is in the inbox (and on the bus) before the offset moves past it.
      const taken = new Set<string>();
      const sub = daemon!.bus.ofType("inbound").subscribe((e) => void (e.channel === "telegram" && taken.add(e.chatId)));
      const t0 = Date.now();
      let last = 0;
      for (const u of updates) last = tg.update(u.body);
      const drained = await until(() => tg!.calls.some((c) => c.method === "getUpdates" && c.body.offset === last + 1), 20_000).then(
        () => true,
        () => false,
      );
      const expected = updates.filter((u) => u.answer).map((u) => String(u.chatId));
      const answered = () => new Set(tg!.calls.filter((c) => /^send/.test(c.method)).map((c) => String(c.body.chat_id)));
      if (drained) await until(() => expected.every((c) => answered().has(c)) || undefined, 30_000, `${what}: every granted message answered`);
      const leaks = updates.filter((u) => !u.answer && (taken.has(String(u.chatId)) || answered().has(String(u.chatId))));
      expect(leaks.map((u) => `${u.shape} from ${u.sender}`), `${what}: answered outside allowFrom`).toEqual([]);
      expect(drained, `${what}: polling stalled before the offset passed every update`).toBe(true);
      const polls = tg.calls.filter((c) => c.method === "getUpdates" && c.at >= t0).map((c) => c.at);
      const gaps = polls.slice(1).map((at, i) => at - polls[i]!);
      expect(Math.max(0, ...gaps), `${what}: the longest gap between getUpdates calls`).toBeLessThan(3_000);
      sub.unsubscribe();
      await daemon!.shutdown();
      daemon = undefined;
      await tg.close();
      tg = undefined;
    }
  }, 180_000);

  it("falls back to plain text when Telegram rejects the HTML, and splits long replies", async () => {
    const long = Array.from({ length: 400 }, (_, i) => `line ${i}: ${"word ".repeat(4).trim()}`).join("\n");
    fake = await startFakeOpenAi([{ content: "weird *markup* here" }, { content: long }]);
    await start();
    tg!.rejectHtmlWhen((t) => t.includes("<i>markup</i>"));
    tg!.message("first");
    await until(() => tg!.sent().find((s) => s.parse_mode === undefined));
    expect(tg!.sent().map((s) => [s.text, s.parse_mode ?? "plain"])).toEqual([
      ["weird <i>markup</i> here", "HTML"],
      ["weird *markup* here", "plain"],
    ]);
    tg!.message("second");
    await until(() => (tg!.sent().length >= 4 ? true : undefined));
    await sleep(300);
    const parts = tg!.sent().slice(2).map((s) => String(s.text));
    expect(parts.length).toBeGreaterThanOrEqual(2);
    expect(parts.every((p) => p.length <= 4096)).toBe(true);
    expect(parts.join("\n")).toBe(long);
  });

  it("a transient failure on a later part or on a file resends only what Telegram has not accepted", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "unused" }));
    tg = await startFakeTelegram(TOKEN);
    const home = await start();
    const photo = join(home, "chart.png");
    const doc = join(home, "notes.txt");
    await writeFile(photo, "PNG");
    await writeFile(doc, "notes");
    // Three parts of text (one per paragraph), then two files; part 2 and the document fail once each.
    const content = [0, 1, 2].map((p) => `part${p} ${"lorem ipsum ".repeat(250).trim()}`).join("\n\n");
    tg.failSend("sendMessage", 502, (body) => String(body.text).startsWith("part1"));
    tg.failSend("sendDocument", 502);
    await queueDelivery(daemon!.store, daemon!.bus, { deliveryId: "long-1", channel: "telegram", chatId: "42", content, media: [photo, doc], answers: [], createdAt: Date.now(), attempts: 0 });
    await until(() => tg!.calls.some((c) => c.method === "sendDocument" && !c.failed), 15_000, "the document");
    await until(async () => (await pendingOutbox(daemon!.store, "telegram")).length === 0 || undefined, 5_000, "the outbox to empty");
    expect(tg.delivered().map((b) => String(b.text).slice(0, 5))).toEqual(["part0", "part1", "part2"]);
    const attempts = (method: string) => tg!.calls.filter((c) => c.method === method).map((c) => (c.failed ? "failed" : "ok"));
    expect(attempts("sendMessage")).toEqual(["ok", "failed", "ok", "ok"]);
    expect(attempts("sendPhoto")).toEqual(["ok"]);
    expect(attempts("sendDocument")).toEqual(["failed", "ok"]);
  });

  it("sends URL media by URL: Telegram fetches a photo or document itself (nanobot passes URLs through)", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "unused" }));
    tg = await startFakeTelegram(TOKEN);
    await start();
    const photo = "https://example.com/chart.png?size=large";
    const doc = "http://example.com/report.pdf";
    await queueDelivery(daemon!.store, daemon!.bus, { deliveryId: "url-1", channel: "telegram", chatId: "42", content: "see attached", media: [photo, doc], answers: [], createdAt: Date.now(), attempts: 0 });
    await until(async () => (await pendingOutbox(daemon!.store, "telegram")).length === 0 || undefined, 5_000, "the outbox to empty");
    expect(tg.calls.filter((c) => c.method === "sendPhoto").map((c) => c.body.photo)).toEqual([photo]);
    expect(tg.calls.filter((c) => c.method === "sendDocument").map((c) => c.body.document)).toEqual([doc]);
  });

  it("stores the offset once messages are in the inbox and never answers one twice after a restart", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "answered" }));
    const home = await start();
    tg!.message("once");
    await until(() => tg!.sent()[0]);
    await daemon!.shutdown();
    daemon = undefined;
    const offsets = tg!.calls.filter((c) => c.method === "getUpdates").map((c) => c.body.offset);
    expect(offsets.at(-1)).toBe(101);
    await start({}, home);
    await sleep(800);
    expect(tg!.calls.filter((c) => c.method === "getUpdates").at(-1)?.body.offset).toBe(101);
    expect(tg!.sent()).toHaveLength(1);
  });

  it("takes a getUpdates answer of 50 messages from 50 chats in one synced batch with its offset, and answers each once", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "answered" }));
    await start();
    const store = daemon!.store;
    const batch = store.batch.bind(store);
    /** The synced batches that take messages in or move the offset. */
    const intake: StoreOp[][] = [];
    vi.spyOn(store, "batch").mockImplementation((ops, opts) => {
      if (opts?.sync && ops.some((o) => o.type === "put" && (o.sublevel === "inbox" || o.key === "telegram:offset"))) intake.push(ops);
      return batch(ops, opts);
    });
    // Queued in one go: the next getUpdates hands out all 50.
    const ids = Array.from({ length: 50 }, (_, i) => tg!.message(`hello ${i}`, undefined, { id: 7000 + i, type: "private" }));
    await until(() => (tg!.sent().length >= 50 ? true : undefined), 30_000, "50 answers");
    await sleep(300);
    expect(intake).toHaveLength(1);
    expect(intake[0]!.filter((o) => o.type === "put" && o.sublevel === "inbox")).toHaveLength(50);
    expect(intake[0]).toContainEqual({ type: "put", sublevel: "meta", key: "telegram:offset", value: { offset: ids.at(-1)! + 1 } });
    const chats = tg!.sent().map((s) => Number(s.chat_id));
    expect(chats.sort((a, b) => a - b)).toEqual(ids.map((_, i) => 7000 + i));
    expect(tg!.sent().every((s) => s.text === "answered")).toBe(true);
  });

  it("in one getUpdates answer, commands are answered as commands, allowFrom holds and group rules hold, message by message", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "answered", delayMs: 200 }));
    await start();
    const alice = { id: 42, username: "alice" };
    const group = { id: -77, type: "supergroup" };
    tg!.message("what is up?", alice, { id: 42, type: "private" });
    tg!.message("/help", alice, { id: 42, type: "private" });
    tg!.message("/start", alice, { id: 43, type: "private" });
    tg!.message("hi", { id: 7, username: "mallory" }, { id: 44, type: "private" });
    tg!.message("hi all", alice, group);
    tg!.message("@troupe_bot are you there?", alice, group);
    await until(() => (tg!.sent().length >= 4 ? true : undefined), 15_000, "four answers");
    await sleep(800);
    const to = (chat: number) => tg!.sent().filter((s) => s.chat_id === String(chat)).map((s) => String(s.text));
    // /help answers at once, beside the running turn: in either order.
    expect(to(42)).toHaveLength(2);
    expect(to(42)).toEqual(expect.arrayContaining([expect.stringContaining("/new"), "answered"]));
    expect(to(43)).toEqual([expect.stringContaining("/new")]);
    expect(to(44)).toEqual([]);
    expect(to(-77)).toEqual(["answered"]);
    expect(tg!.sent()).toHaveLength(4);
    expect(tg!.calls.flatMap((c) => (c.answered ? [c.answered.updates] : []))).toEqual([6]);
  });

  it("backs off on 502 and 409 with growing waits, then recovers", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "back" }));
    tg = await startFakeTelegram(TOKEN);
    tg.failPolls(502, 502, 409);
    await start();
    tg.message("are you there?");
    await until(() => tg!.sent()[0], 15_000);
    const polls = tg.calls.filter((c) => c.method === "getUpdates").map((c) => c.at);
    const gaps = [polls[1]! - polls[0]!, polls[2]! - polls[1]!, polls[3]! - polls[2]!];
    expect(gaps[0]).toBeGreaterThanOrEqual(90);
    expect(gaps[1]).toBeGreaterThanOrEqual(180);
    expect(gaps[2]).toBeGreaterThanOrEqual(360);
  });

  it("the watchdog gives up a stalled poll and polls again", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "still here" }));
    tg = await startFakeTelegram(TOKEN);
    tg.hangPolls(1);
    await start();
    tg.message("hello?");
    const t0 = Date.now();
    await until(() => tg!.sent()[0], 10_000);
    // 1 s long poll + 1 s grace, then a back-off and a fresh poll.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1_500);
    expect(tg.calls.filter((c) => c.method === "getUpdates").length).toBeGreaterThanOrEqual(2);
  });

  it("a rejected token (401) stops the channel with a clear status; the daemon keeps running", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "x" }));
    tg = await startFakeTelegram("other:token");
    await start();
    const failed = await until(() => {
      const c = daemon!.supervisor.getSnapshot().context.children["channel:telegram"];
      return c?.lastError ? c : undefined;
    });
    expect(failed.lastError).toBe("Telegram rejected the bot token (401): Unauthorized. Check channels.telegram.token.");
    // Restarting cannot fix a rejected token: failed at once, not retried.
    expect(failed.status).toBe("failed");
    await sleep(800);
    expect(tg.calls.filter((c) => c.method === "getMe")).toHaveLength(1);
    expect(daemon!.supervisor.getSnapshot().status).toBe("active");
  });

  it("transcribes a voice message through the configured OpenAI-compatible endpoint", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "noted" }));
    const { speech, upload } = await fakeTranscription("buy milk tomorrow");
    tg = await startFakeTelegram(TOKEN);
    tg.addFile("v1", "voice/file_9.oga", Buffer.from("OGGVOICE"));
    const home = await start({ transcription: { apiBase: `${speech.origin}/v1`, apiKey: "k", model: "whisper-1" } });
    tg.message("", undefined, undefined, { voice: { file_id: "v1", file_unique_id: "uv1", duration: 2 } });
    await until(() => tg!.sent()[0]);
    await speech.close();
    expect(upload()).toContain("OGGVOICE");
    expect(upload()).toContain("whisper-1");
    expect(String(fake.requests[0]?.body.messages.at(-1)?.content)).toMatch(
      new RegExp(`\\n\\n\\[voice message: ${join(home, "media/telegram/uv1.oga").replace(/[/.]/g, "\\$&")}\\]\\n\\[transcription: buy milk tomorrow\\]$`),
    );
  });

  it("transcribes an audio file through channels.transcription (the endpoint every channel uses)", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "noted" }));
    const { speech, upload } = await fakeTranscription("call the plumber");
    tg = await startFakeTelegram(TOKEN);
    tg.addFile("a1", "music/file_3.mp3", Buffer.from("MP3AUDIO"));
    const home = await tmp();
    daemon = await startDaemon(
      home,
      fake.url,
      {
        config: {
          channels: {
            telegram: { enabled: true, token: TOKEN, apiRoot: tg.apiRoot, allowFrom: ["alice"] },
            transcription: { apiBase: `${speech.origin}/v1`, model: "large-v3" },
            transcriptionLanguage: "de",
          },
        },
      },
      { telegram: { pollTimeoutS: 1, baseBackoffMs: 100, watchdogGraceS: 1 } },
    );
    tg.message("", undefined, undefined, { audio: { file_id: "a1", file_unique_id: "ua1", duration: 3, file_name: "memo.mp3" } });
    await until(() => tg!.sent()[0]);
    await speech.close();
    expect(upload()).toContain("MP3AUDIO");
    expect(upload()).toMatch(/name="model"\r\n\r\nlarge-v3\r\n/);
    expect(upload()).toMatch(/name="language"\r\n\r\nde\r\n/);
    expect(String(fake.requests[0]?.body.messages.at(-1)?.content)).toMatch(
      new RegExp(`\\n\\n\\[audio: ${join(home, "media/telegram/ua1.mp3").replace(/[/.]/g, "\\$&")}\\]\\n\\[transcription: call the plumber\\]$`),
    );
  });

  it("honours channels.telegram.proxy for Bot API calls and file downloads", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "via proxy" }));
    const hits: string[] = [];
    const proxy = createServer((req, res) => {
      hits.push(`${req.method} ${req.url}`);
      const upstream = httpRequest(new URL(req.url!), { method: req.method, headers: req.headers }, (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      });
      upstream.on("error", () => res.destroy());
      req.pipe(upstream);
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
    tg = await startFakeTelegram(TOKEN);
    tg.addFile("d9", "documents/x.txt", Buffer.from("hello"));
    await start({ proxy: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` });
    tg.message("", undefined, undefined, { caption: "see", document: { file_id: "d9", file_unique_id: "ud9", file_name: "x.txt" } });
    await until(() => tg!.sent()[0]);
    proxy.closeAllConnections();
    proxy.close();
    expect(hits.some((h) => h.startsWith(`POST ${tg!.apiRoot}/bot${TOKEN}/getUpdates`))).toBe(true);
    expect(hits.some((h) => h.startsWith(`POST ${tg!.apiRoot}/bot${TOKEN}/sendMessage`))).toBe(true);
    expect(hits).toContain(`GET ${tg!.apiRoot}/file/bot${TOKEN}/documents/x.txt`);
  });

  it("downloads photos and documents to the media folder and hands the paths to the turn", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "nice picture" }));
    tg = await startFakeTelegram(TOKEN);
    tg.addFile("ph1", "photos/file_1.jpg", Buffer.from("JPEGDATA"));
    const home = await start();
    tg.message("", undefined, undefined, { caption: "look", photo: [{ file_id: "ph0", file_unique_id: "s", width: 1, height: 1 }, { file_id: "ph1", file_unique_id: "uph1", width: 9, height: 9 }] });
    await until(() => tg!.sent()[0]);
    tg.addFile("doc1", "documents/file_2.pdf", Buffer.from("%PDF-1.4"));
    tg.message("", undefined, undefined, { caption: "and this", document: { file_id: "doc1", file_unique_id: "udoc1", file_name: "report.pdf" } });
    await until(() => tg!.sent()[1]);
    expect(String(fake.requests[1]?.body.messages.at(-1)?.content)).toContain(`\n\nand this\n[file report.pdf: ${join(home, "media/telegram/udoc1.pdf")}]`);
    const saved = join(home, "media/telegram/uph1.jpg");
    expect(await readFile(saved, "utf8")).toBe("JPEGDATA");
    // The image reaches the model as an image part, before the text (nanobot's order); the text names the saved file.
    const content = fake.requests[0]?.body.messages.at(-1)?.content as Array<{ type: string; text?: string; image_url?: { url: string } }>;
    expect(content.map((p) => p.type)).toEqual(["text", "image_url", "text"]);
    expect(content[0]?.text).toMatch(/^\[Runtime Context — metadata only, not instructions\][\s\S]*\[\/Runtime Context\]$/);
    expect(content[1]).toEqual({ type: "image_url", image_url: { url: `data:image/jpeg;base64,${Buffer.from("JPEGDATA").toString("base64")}` } });
    expect(content[2]?.text).toMatch(new RegExp(`^look\\n\\[image: ${saved.replace(/[/.]/g, "\\$&")}\\]$`));
  });
});
