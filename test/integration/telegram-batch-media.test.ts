import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Daemon } from "../../src/runtime.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { startFakeTelegram, type FakeTelegram } from "../fixtures/fake-telegram.js";
import { startFakeWeb } from "../fixtures/fake-web.js";
import { startDaemon } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";

const TOKEN = "123:TEST";

// A getUpdates answer's messages are taken in together (one synced write with the offset), but an
// update whose reading waits on the network (a download, a transcription) is not read until what came
// before it is in, and is taken in on its own once read: a text message does not wait for another
// chat's voice note, and a failed write reads no media again that was already stored.
describe("Telegram: one getUpdates answer, a text message then a voice note in another chat", () => {
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

  it("takes the text message in without waiting for the other chat's voice transcription", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "answered" }));
    /** Set when the (slow: 3 s) transcription endpoint answers. */
    let transcribed = false;
    const speech = await startFakeWeb({
      "/v1/audio/transcriptions": (req, res) => {
        req.resume();
        req.on("end", () =>
          setTimeout(() => {
            transcribed = true;
            res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ text: "slow words" }));
          }, 3_000),
        );
      },
    });
    closeSpeech = () => speech.close();
    tg = await startFakeTelegram(TOKEN);
    tg.addFile("v1", "voice/file_9.oga", Buffer.from("OGGVOICE"));
    daemon = await startDaemon(
      await tmp(),
      fake.url,
      {
        config: {
          channels: {
            telegram: { enabled: true, token: TOKEN, apiRoot: tg.apiRoot, allowFrom: ["alice"], transcription: { apiBase: `${speech.origin}/v1`, apiKey: "k", model: "whisper-1" } },
          },
        },
      },
      { telegram: { pollTimeoutS: 1, baseBackoffMs: 100, watchdogGraceS: 1 } },
    );
    /** Per chat: whether the transcription had answered when its message was taken in (published as `inbound`). */
    const takenAfterTranscription = new Map<string, boolean>();
    daemon.bus.ofType("inbound").subscribe((e) => takenAfterTranscription.set(e.chatId, transcribed));
    const alice = { id: 42, username: "alice" };
    // Queued together: the next getUpdates hands both out in one answer.
    tg.message("hi", alice, { id: 42, type: "private" });
    tg.message("", alice, { id: 43, type: "private" }, { voice: { file_id: "v1", file_unique_id: "uv1", duration: 2 } });
    await until(() => takenAfterTranscription.get("43") ?? undefined, 20_000, "the voice note taken in");
    expect(tg.calls.flatMap((c) => (c.answered ? [c.answered.updates] : []))).toEqual([2]);
    // Chat 42's "hi" should not wait for chat 43's transcription (it did not before the batch change).
    expect(takenAfterTranscription.get("42")).toBe(false);
  });
});

describe("Telegram: a getUpdates answer whose intake write fails once", () => {
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

  it("does not transcribe a voice note that was already read again", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "answered" }));
    let transcriptions = 0;
    const speech = await startFakeWeb({
      "/v1/audio/transcriptions": (req, res) => {
        transcriptions++;
        req.resume();
        req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ text: "buy milk" })));
      },
    });
    closeSpeech = () => speech.close();
    tg = await startFakeTelegram(TOKEN);
    tg.addFile("v1", "voice/file_9.oga", Buffer.from("OGGVOICE"));
    daemon = await startDaemon(
      await tmp(),
      fake.url,
      {
        config: {
          channels: {
            telegram: { enabled: true, token: TOKEN, apiRoot: tg.apiRoot, allowFrom: ["alice"], transcription: { apiBase: `${speech.origin}/v1`, apiKey: "k", model: "whisper-1" } },
          },
        },
      },
      { telegram: { pollTimeoutS: 1, baseBackoffMs: 100, watchdogGraceS: 1 } },
    );
    const store = daemon.store;
    const batch = store.batch.bind(store);
    let failed = false;
    // The first write that takes chat 42's message in fails (once).
    vi.spyOn(store, "batch").mockImplementation((ops, opts) => {
      if (!failed && ops.some((o) => o.type === "put" && o.sublevel === "inbox" && String(o.key).startsWith("telegram:42"))) {
        failed = true;
        return Promise.reject(new Error("injected: the intake write failed"));
      }
      return batch(ops, opts);
    });
    const alice = { id: 42, username: "alice" };
    // One getUpdates answer: a voice note in chat 43, then a text in chat 42.
    tg.message("", alice, { id: 43, type: "private" }, { voice: { file_id: "v1", file_unique_id: "uv1", duration: 2 } });
    tg.message("hi", alice, { id: 42, type: "private" });
    await until(() => (tg!.sent().length >= 2 ? true : undefined), 20_000, "both answered");
    expect(failed).toBe(true);
    expect(transcriptions).toBe(1);
  });

  it("a write that fails after reading the answer outlived the poll's watchdog is logged as what it was, not as a stalled getUpdates", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "answered" }));
    const speech = await startFakeWeb({
      // Slower than the poll's watchdog (1 s long poll + 1 s grace).
      "/v1/audio/transcriptions": (req, res) => {
        req.resume();
        req.on("end", () => setTimeout(() => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ text: "buy milk" })), 3_000));
      },
    });
    closeSpeech = () => speech.close();
    tg = await startFakeTelegram(TOKEN);
    tg.addFile("v1", "voice/file_9.oga", Buffer.from("OGGVOICE"));
    const home = await tmp();
    daemon = await startDaemon(
      home,
      fake.url,
      {
        config: {
          channels: {
            telegram: { enabled: true, token: TOKEN, apiRoot: tg.apiRoot, allowFrom: ["alice"], transcription: { apiBase: `${speech.origin}/v1`, apiKey: "k", model: "whisper-1" } },
          },
        },
      },
      { telegram: { pollTimeoutS: 1, baseBackoffMs: 100, watchdogGraceS: 1 } },
    );
    const store = daemon.store;
    const batch = store.batch.bind(store);
    let failed = false;
    vi.spyOn(store, "batch").mockImplementation((ops, opts) => {
      if (!failed && ops.some((o) => o.type === "put" && o.sublevel === "inbox" && String(o.key).startsWith("telegram:43"))) {
        failed = true;
        return Promise.reject(new Error("injected: the intake write failed"));
      }
      return batch(ops, opts);
    });
    tg.message("", { id: 43, username: "alice" }, { id: 43, type: "private" }, { voice: { file_id: "v1", file_unique_id: "uv1", duration: 2 } });
    await until(() => (tg!.sent().length >= 1 ? true : undefined), 30_000, "the voice note answered");
    const log = (await readFile(join(home, "logs/troupe.log"), "utf8"))
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { msg: string; error?: { message?: string } | string });
    const backoffs = log.filter((l) => /backing off/.test(l.msg)).map((l) => JSON.stringify(l.error));
    expect(failed).toBe(true);
    expect(backoffs).toHaveLength(1);
    expect(backoffs[0]).toMatch(/the intake write failed/);
    expect(backoffs[0]).not.toMatch(/stalled/);
  });
});
