import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Daemon } from "../../src/daemon-types.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { startFakeTelegram, type FakeTelegram } from "../fixtures/fake-telegram.js";
import { startFakeWeb } from "../fixtures/fake-web.js";
import { startDaemon } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";

const TOKEN = "123:TEST";
const alice = { id: 42, username: "alice" };
const voice = { voice: { file_id: "v1", file_unique_id: "uv1", duration: 2 } };

// A getUpdates answer's messages are taken in together (one synced write with the offset), but an
// update whose reading waits on the network (a download, a transcription) is not read until what came
// before it is in, and is taken in on its own once read: a text message does not wait for another
// chat's voice note, and a failed write reads no media again that was already stored.
describe("Telegram: a getUpdates answer with a voice note", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let tg: FakeTelegram | undefined;
  let daemon: Daemon | undefined;
  let closeSpeech: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await daemon?.shutdown();
    await fake?.close();
    await tg?.close();
    await closeSpeech?.();
    daemon = undefined;
    tg = undefined;
  });

  /** A daemon with Telegram (1 s long polls, 1 s watchdog grace) and a transcription endpoint that answers "buy milk" after `delayMs`. */
  async function start(opts: { delayMs: number; onTranscribed?: () => void; onRequest?: () => void }) {
    fake = await startFakeOpenAi([], () => ({ content: "answered" }));
    const speech = await startFakeWeb({
      "/v1/audio/transcriptions": (req, res) => {
        opts.onRequest?.();
        req.resume();
        req.on("end", () =>
          setTimeout(() => {
            opts.onTranscribed?.();
            res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ text: "buy milk" }));
          }, opts.delayMs),
        );
      },
    });
    closeSpeech = () => speech.close();
    tg = await startFakeTelegram(TOKEN);
    tg.addFile("v1", "voice/file_9.oga", Buffer.from("OGGVOICE"));
    const home = await tmp();
    const transcription = { apiBase: `${speech.origin}/v1`, apiKey: "k", model: "whisper-1" };
    daemon = await startDaemon(
      home,
      fake.url,
      { config: { channels: { telegram: { enabled: true, token: TOKEN, apiRoot: tg.apiRoot, allowFrom: ["alice"], transcription } } } },
      { telegram: { pollTimeoutS: 1, baseBackoffMs: 100, watchdogGraceS: 1 } },
    );
    return { daemon, tg, home };
  }

  /** The first intake write that takes a message of `chatId` in fails (once); `failed()` says whether it did. */
  function failFirstIntakeOf(d: Daemon, chatId: string) {
    const batch = d.store.batch.bind(d.store);
    let failed = false;
    vi.spyOn(d.store, "batch").mockImplementation((ops, opts) => {
      if (!failed && ops.some((o) => o.type === "put" && o.sublevel === "inbox" && String(o.key).startsWith(`telegram:${chatId}`))) {
        failed = true;
        return Promise.reject(new Error("injected: the intake write failed"));
      }
      return batch(ops, opts);
    });
    return { failed: () => failed };
  }

  it("takes a text message in without waiting for another chat's voice transcription", async () => {
    /** Set when the (slow: 3 s) transcription endpoint answers. */
    let transcribed = false;
    const { daemon: d, tg: bot } = await start({ delayMs: 3_000, onTranscribed: () => (transcribed = true) });
    /** Per chat: whether the transcription had answered when its message was taken in (published as `inbound`). */
    const takenAfterTranscription = new Map<string, boolean>();
    d.bus.ofType("inbound").subscribe((e) => takenAfterTranscription.set(e.chatId, transcribed));
    // Queued together: the next getUpdates hands both out in one answer.
    bot.message("hi", alice, { id: 42, type: "private" });
    bot.message("", alice, { id: 43, type: "private" }, voice);
    await until(() => takenAfterTranscription.get("43") ?? undefined, 20_000, "the voice note taken in");
    expect(bot.calls.flatMap((c) => (c.answered ? [c.answered.updates] : []))).toEqual([2]);
    expect(takenAfterTranscription.get("42")).toBe(false);
  });

  it("does not transcribe a voice note again when a later message's intake write fails", async () => {
    let transcriptions = 0;
    const { daemon: d, tg: bot } = await start({ delayMs: 0, onRequest: () => transcriptions++ });
    const intake = failFirstIntakeOf(d, "42");
    // One getUpdates answer: a voice note in chat 43, then a text in chat 42.
    bot.message("", alice, { id: 43, type: "private" }, voice);
    bot.message("hi", alice, { id: 42, type: "private" });
    await until(() => (bot.sent().length >= 2 ? true : undefined), 20_000, "both answered");
    expect(intake.failed()).toBe(true);
    expect(transcriptions).toBe(1);
  });

  it("logs a write that fails after the answer's reading outlived the poll's watchdog as what it was, not as a stalled getUpdates", async () => {
    // Slower than the poll's watchdog (1 s long poll + 1 s grace).
    const { daemon: d, tg: bot, home } = await start({ delayMs: 3_000 });
    const intake = failFirstIntakeOf(d, "43");
    bot.message("", { id: 43, username: "alice" }, { id: 43, type: "private" }, voice);
    await until(() => (bot.sent().length >= 1 ? true : undefined), 30_000, "the voice note answered");
    const log = (await readFile(join(home, "logs/troupe.log"), "utf8"))
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { msg: string; error?: unknown });
    const backoffs = log.filter((l) => /backing off/.test(l.msg)).map((l) => JSON.stringify(l.error));
    expect(intake.failed()).toBe(true);
    expect(backoffs).toHaveLength(1);
    expect(backoffs[0]).toMatch(/the intake write failed/);
    expect(backoffs[0]).not.toMatch(/stalled/);
  });
});
