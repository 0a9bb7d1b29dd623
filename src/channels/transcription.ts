import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { extname } from "node:path";
import type { Logger } from "pino";
import type { Config } from "../config/schema.js";
import { loadOpenAi } from "../providers/openai-sdk.js";

/**
 * Speech to text for every channel: a Telegram voice note and an audio file posted to the control API
 * go through the same transcriber, built once by the runtime from the config. The endpoint is an
 * OpenAI-compatible `/audio/transcriptions`: Groq's or OpenAI's (nanobot's
 * channels.transcriptionProvider, keyed by providers.<name>.apiKey or the provider's variable), or
 * channels.transcription.apiBase (any compatible server; a local one needs no key).
 */

interface ProviderDefaults {
  apiBase: string;
  model: string;
  envKey: string;
}

export const TRANSCRIPTION_PROVIDERS: Record<string, ProviderDefaults> = {
  groq: { apiBase: "https://api.groq.com/openai/v1", model: "whisper-large-v3", envKey: "GROQ_API_KEY" },
  openai: { apiBase: "https://api.openai.com/v1", model: "whisper-1", envKey: "OPENAI_API_KEY" },
};

export interface TranscriptionEndpoint {
  /** What it is, for logs and status: "groq", "openai" or "channels.transcription.apiBase". */
  source: string;
  apiBase: string;
  apiKey: string;
  model: string;
  language: string | null;
  maxBytes: number;
}

/** The endpoint voice goes to, or why voice stays a file. */
export type TranscriptionSetting = { on: true; endpoint: TranscriptionEndpoint } | { on: false; why: string };

export function resolveTranscription(config: Config, env: NodeJS.ProcessEnv = process.env): TranscriptionSetting {
  const { transcription: t, transcriptionProvider, transcriptionLanguage: language } = config.channels;
  if (!t.enabled) return { on: false, why: "channels.transcription.enabled is false" };
  const maxBytes = t.maxUploadMb * 1024 * 1024;
  if (t.apiBase) {
    return { on: true, endpoint: { source: "channels.transcription.apiBase", apiBase: t.apiBase, apiKey: t.apiKey, model: t.model ?? "whisper-1", language, maxBytes } };
  }
  const name = transcriptionProvider.trim().toLowerCase();
  const defaults = TRANSCRIPTION_PROVIDERS[name];
  if (!defaults) {
    return {
      on: false,
      why: `channels.transcriptionProvider "${transcriptionProvider}" is not one troupe can use: set it to groq or openai, or set channels.transcription.apiBase to an OpenAI-compatible endpoint`,
    };
  }
  const provider = config.providers[name];
  const apiKey = t.apiKey || provider?.apiKey || env[defaults.envKey] || "";
  if (!apiKey) return { on: false, why: `no ${name} API key: set providers.${name}.apiKey or ${defaults.envKey} (or channels.transcription.apiBase for another endpoint)` };
  return { on: true, endpoint: { source: name, apiBase: provider?.apiBase || defaults.apiBase, apiKey, model: t.model ?? defaults.model, language, maxBytes } };
}

const AUDIO_EXTS = new Set([".ogg", ".oga", ".opus", ".mp3", ".mpga", ".mpeg", ".m4a", ".mp4", ".aac", ".wav", ".webm", ".flac"]);

/** Whether a file is speech the transcriber takes, by its MIME type or else its name. */
export function isAudio(path: string, mimeType?: string): boolean {
  return mimeType?.toLowerCase().startsWith("audio/") || AUDIO_EXTS.has(extname(path).toLowerCase());
}

export interface Transcriber {
  setting: TranscriptionSetting;
  /** The text of a recording, or undefined when it could not be had (logged with the endpoint and why). */
  transcribe(path: string): Promise<string | undefined>;
}

export function createTranscriber(setting: TranscriptionSetting, logger?: Logger, timeoutMs = 120_000): Transcriber {
  return {
    setting,
    async transcribe(path) {
      if (!setting.on) return undefined;
      const { endpoint } = setting;
      const where = `${endpoint.apiBase.replace(/\/+$/, "")}/audio/transcriptions`;
      try {
        const { size } = await stat(path);
        if (size > endpoint.maxBytes) {
          logger?.warn({ path, size, limitMb: endpoint.maxBytes / 1024 / 1024 }, "audio not transcribed: larger than channels.transcription.maxUploadMb; passing the file instead");
          return undefined;
        }
        const { default: OpenAI } = await loadOpenAi();
        const client = new OpenAI({ baseURL: endpoint.apiBase, apiKey: endpoint.apiKey || "none", maxRetries: 1, timeout: timeoutMs });
        const result = await client.audio.transcriptions.create({ file: createReadStream(path), model: endpoint.model, ...(endpoint.language ? { language: endpoint.language } : {}) });
        const text = result.text.trim();
        if (!text) logger?.info({ path, endpoint: where }, "transcription came back empty; passing the file instead");
        return text || undefined;
      } catch (err) {
        const e = err as Error & { status?: number; cause?: { code?: string } };
        const why = e.status ? `HTTP ${e.status}: ${e.message}` : e.cause?.code ? `${e.cause.code} (${e.message})` : e.message;
        logger?.warn({ path, endpoint: where, model: endpoint.model }, `voice transcription failed at ${where}: ${why}; passing the file instead`);
        return undefined;
      }
    },
  };
}
