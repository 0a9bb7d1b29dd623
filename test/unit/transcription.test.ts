import { readFile } from "node:fs/promises";
import { extname } from "node:path";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/index.js";
import { decodeAttachment, takeAttachments } from "../../src/channels/api-media.js";
import { createTranscriber, isAudio, resolveTranscription } from "../../src/channels/transcription.js";
import { useTempDirs } from "../helpers/tmp.js";

const resolve = (raw: Record<string, unknown>, env: NodeJS.ProcessEnv = {}) => {
  const { config, warnings } = parseConfig(raw, "c.json", env);
  return { setting: resolveTranscription(config, env), warnings };
};

describe("transcription settings: nanobot's keys, for every channel", () => {
  it("defaults to Groq as nanobot does, keyed by providers.groq.apiKey or GROQ_API_KEY", () => {
    expect(resolve({ providers: { groq: { apiKey: "gsk_1" } } }).setting).toEqual({
      on: true,
      endpoint: { source: "groq", apiBase: "https://api.groq.com/openai/v1", apiKey: "gsk_1", model: "whisper-large-v3", language: null, maxBytes: 25 * 1024 * 1024 },
    });
    expect(resolve({}, { GROQ_API_KEY: "gsk_env" }).setting).toMatchObject({ on: true, endpoint: { apiKey: "gsk_env" } });
    expect(resolve({}).setting).toEqual({ on: false, why: "no groq API key: set providers.groq.apiKey or GROQ_API_KEY (or channels.transcription.apiBase for another endpoint)" });
  });

  it("channels.transcriptionProvider openai, with its apiBase and nanobot's transcriptionLanguage (snake_case too)", () => {
    const { setting } = resolve({ channels: { transcription_provider: "OpenAI", transcription_language: "fr" }, providers: { openai: { apiKey: "sk-o", apiBase: "http://127.0.0.1:9/v1" } } });
    expect(setting).toMatchObject({ on: true, endpoint: { source: "openai", apiBase: "http://127.0.0.1:9/v1", apiKey: "sk-o", model: "whisper-1", language: "fr" } });
  });

  it("an empty language or model means the default, as null does", () => {
    const { setting } = resolve({ channels: { transcriptionLanguage: "", transcription: { model: "" } }, providers: { groq: { apiKey: "k" } } });
    expect(setting).toMatchObject({ on: true, endpoint: { model: "whisper-large-v3", language: null } });
  });

  it("channels.transcription.apiBase: any OpenAI-compatible endpoint, no key needed", () => {
    const { setting } = resolve({ channels: { transcription: { apiBase: "http://127.0.0.1:8080/v1", model: "large-v3" } } });
    expect(setting).toMatchObject({ on: true, endpoint: { source: "channels.transcription.apiBase", apiBase: "http://127.0.0.1:8080/v1", apiKey: "", model: "large-v3" } });
  });

  it("says why it is off: a provider troupe cannot use, or switched off", () => {
    expect(resolve({ channels: { transcriptionProvider: "assemblyai" }, providers: { groq: { apiKey: "k" } } }).setting).toEqual({
      on: false,
      why: 'channels.transcriptionProvider "assemblyai" is not one troupe can use: set it to groq or openai, or set channels.transcription.apiBase to an OpenAI-compatible endpoint',
    });
    expect(resolve({ channels: { transcription: { enabled: false, apiBase: "http://127.0.0.1:1/v1" } } }).setting).toEqual({ on: false, why: "channels.transcription.enabled is false" });
  });

  it("reads troupe's earlier channels.telegram.transcription as channels.transcription, with a note", () => {
    const { setting, warnings } = resolve({ channels: { telegram: { transcription: { apiBase: "http://127.0.0.1:7/v1", apiKey: "k", model: "whisper-1" } } } });
    expect(setting).toMatchObject({ on: true, endpoint: { apiBase: "http://127.0.0.1:7/v1", apiKey: "k", model: "whisper-1" } });
    expect(warnings).toContain("channels.telegram.transcription is read as channels.transcription (transcription now serves every channel)");
  });

  it("reads nanobot's top-level transcription block (provider and language win over the channels keys, as in nanobot); nulls and its defaults say nothing", () => {
    const { setting, warnings } = resolve(
      { channels: { transcriptionProvider: "groq", transcriptionLanguage: "de" }, transcription: { enabled: true, provider: "openai", model: null, language: "en", maxDurationSec: 120, maxUploadMb: 10 } },
      { OPENAI_API_KEY: "sk-env" },
    );
    expect(setting).toMatchObject({ on: true, endpoint: { source: "openai", apiKey: "sk-env", model: "whisper-1", language: "en", maxBytes: 10 * 1024 * 1024 } });
    expect(warnings.filter((w) => w.includes("transcription"))).toEqual(["transcription.provider, transcription.language, transcription.enabled, transcription.maxUploadMb are read from channels (transcription serves every channel there)"]);
    // A nanobot config as onboard writes it: every value at its default or null; nothing to say.
    const quiet = resolve({ transcription: { enabled: true, provider: null, model: null, language: null, maxDurationSec: 120, maxUploadMb: 25 } });
    expect(quiet.warnings.filter((w) => /transcription\.(provider|model|language|maxDurationSec)/.test(w))).toEqual([]);
  });
});

describe("transcriber and API attachments", () => {
  const tempDir = useTempDirs();

  it("recognises audio by MIME type or name", () => {
    expect([isAudio("a.oga"), isAudio("a.bin", "audio/ogg"), isAudio("a.txt"), isAudio("v.webm")]).toEqual([true, true, false, true]);
  });

  it("decodes base64 and base64 data: URLs, and refuses anything else with the attachment's index", () => {
    expect(decodeAttachment({ data: Buffer.from("hi").toString("base64") }, 0).bytes.toString()).toBe("hi");
    expect(decodeAttachment({ data: `data:audio/ogg;base64,${Buffer.from("OGG").toString("base64")}` }, 0)).toEqual({ bytes: Buffer.from("OGG"), type: "audio/ogg" });
    expect(() => decodeAttachment({ data: "data:text/plain,hello" }, 1)).toThrow("media[1]: a data: URL must be base64 (data:<type>;base64,...)");
    expect(() => decodeAttachment({ data: "not base64!" }, 2)).toThrow("media[2]: data is not base64");
  });

  it("saves files under media/api (named by content), names them in the message, and transcribes audio only", async () => {
    const media = await tempDir();
    const seen: string[] = [];
    const transcriber = { setting: { on: false as const, why: "test" }, transcribe: async (p: string) => (seen.push(p), "hello there") };
    const taken = await takeAttachments(
      [
        { name: "note.ogg", data: Buffer.from("VOICE").toString("base64") },
        { type: "image/png", data: Buffer.from("PNG").toString("base64") },
      ],
      media,
      transcriber,
    );
    expect(taken.media).toHaveLength(2);
    expect(taken.media[0]).toMatch(new RegExp(`^${media}/api/[0-9a-f]{16}\\.ogg$`));
    expect(await readFile(taken.media[0]!, "utf8")).toBe("VOICE");
    expect(taken.lines).toEqual([`[audio note.ogg: ${taken.media[0]}]`, "[transcription: hello there]", `[image: ${taken.media[1]}]`]);
    expect(seen).toEqual([taken.media[0]]);
    // A name's odd extension is not trusted: the type's, else .bin.
    const odd = await takeAttachments([{ name: "x.o g", type: "audio/mpeg", data: "AAAA" }, { name: "y", data: "AAAA" }], media);
    expect(odd.media.map((p) => extname(p))).toEqual([".mp3", ".bin"]);
  });

  it("an endpoint that cannot be reached leaves the file, and the log says where and why", async () => {
    const dir = await tempDir();
    const lines: string[] = [];
    const logger = { warn: (_o: unknown, msg: string) => lines.push(msg), info: () => undefined } as never;
    const t = createTranscriber({ on: true, endpoint: { source: "x", apiBase: "http://127.0.0.1:9/v1", apiKey: "", model: "whisper-1", language: null, maxBytes: 1000 } }, logger, 5_000);
    const { media } = await takeAttachments([{ name: "a.mp3", data: Buffer.from("MP3").toString("base64") }], dir);
    expect(await t.transcribe(media[0]!)).toBeUndefined();
    expect(lines[0]).toMatch(/^voice transcription failed at http:\/\/127\.0\.0\.1:9\/v1\/audio\/transcriptions: .+; passing the file instead$/);
    const big = createTranscriber({ on: true, endpoint: { source: "x", apiBase: "http://127.0.0.1:9/v1", apiKey: "", model: "m", language: null, maxBytes: 2 } }, logger);
    expect(await big.transcribe(media[0]!)).toBeUndefined();
    expect(lines[1]).toBe("audio not transcribed: larger than channels.transcription.maxUploadMb; passing the file instead");
  });
});
