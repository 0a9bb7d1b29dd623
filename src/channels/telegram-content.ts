import { mkdir, writeFile } from "node:fs/promises";
import type { Agent } from "node:http";
import { extname, join } from "node:path";
import type { Api } from "grammy";
import type { Logger } from "pino";
import { fileOf, locationLine, MEDIA_FIELDS, replyTag, type MediaCarrier } from "./telegram-context.js";
import { httpGet } from "./telegram-net.js";
import type { TelegramMessage } from "./telegram-update.js";
import type { Transcriber } from "./transcription.js";

export interface ContentDeps {
  api: Api;
  apiRoot: string;
  token: string;
  /** channels.telegram.proxy's agent, for file downloads. */
  agent?: Agent;
  mediaDir: string;
  /** Voice notes and audio go through it; without it they stay files. */
  transcriber?: Transcriber;
  log?: Logger;
}

/**
 * What a Telegram message brings to its turn: the message replied to (quoted, its file attached), the
 * text, a location, and the message's file, downloaded to <data dir>/media/telegram (a voice note or
 * audio file transcribed too).
 */
export function telegramContent(deps: ContentDeps) {
  async function download(fileId: string, fallbackName: string): Promise<string> {
    const file = await deps.api.getFile(fileId);
    if (!file.file_path) throw new Error("Telegram gave no file path");
    const body = await httpGet(`${deps.apiRoot}/file/bot${deps.token}/${file.file_path}`, deps.agent);
    const dir = join(deps.mediaDir, "telegram");
    await mkdir(dir, { recursive: true });
    const path = join(dir, `${file.file_unique_id}${extname(file.file_path) || extname(fallbackName)}`);
    await writeFile(path, body);
    return path;
  }

  /** A message's file: its path and lines (`[image: path]`, a transcription); a file that could not be downloaded says so, or is left out (`quiet`). */
  async function fileLines(m: MediaCarrier, quiet = false): Promise<{ path?: string; lines: string[] }> {
    const file = fileOf(m);
    if (!file) return { lines: [] };
    let path: string;
    try {
      path = await download(file.fileId, file.name);
    } catch (err) {
      deps.log?.warn({ err }, "could not download a file");
      return { lines: quiet ? [] : [`[${file.label}: could not be downloaded]`] };
    }
    const lines = [`[${file.label}: ${path}]`];
    // Voice notes and audio files are transcribed as on every channel (the file stays attached).
    const text = (file.field === "voice" || file.field === "audio") && deps.transcriber ? await deps.transcriber.transcribe(path) : undefined;
    if (text) lines.push(`[transcription: ${text}]`);
    return { path, lines };
  }

  /** The turn's content and files for a message; `botId` tells a reply to the bot's own message. A command gets no reply context. */
  async function contentOf(m: TelegramMessage, botId?: number): Promise<{ content: string; media: string[] }> {
    const text = m.text ?? m.caption ?? "";
    const own = await fileLines(m);
    const parts = [text, ...(m.location ? [locationLine(m.location)] : []), ...own.lines];
    const media = own.path ? [own.path] : [];
    const reply = m.reply_to_message;
    if (reply && !text.startsWith("/")) {
      const quoted = await fileLines(reply, true);
      const tag = replyTag(reply, botId, quoted.lines[0]);
      if (tag) parts.unshift(tag);
      if (quoted.path) media.unshift(quoted.path);
    }
    return { content: parts.filter(Boolean).join("\n"), media };
  }

  /** Whether reading an update waits on the network: a file to download (its own, or the replied message's). */
  function carriesMedia(update: unknown): boolean {
    const m = (update as { message?: Record<string, unknown> } | null)?.message;
    if (typeof m !== "object" || m === null) return false;
    const reply = m.reply_to_message as Record<string, unknown> | undefined;
    return MEDIA_FIELDS.some((field) => m[field] !== undefined || (typeof reply === "object" && reply !== null && reply[field] !== undefined));
  }

  return { contentOf, carriesMedia };
}
