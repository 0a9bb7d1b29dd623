import type { Api } from "grammy";
import type { Logger } from "pino";
import type { Config } from "../config/schema.js";
import type { ProgressUpdate } from "./channel.js";
import { chatTarget } from "./telegram-context.js";
import { markdownToTelegramHtml, TELEGRAM_MAX_CHARS, toolHintHtml } from "./telegram-format.js";

const STREAM_EDIT_EVERY_MS = 1_000;

/** A reply being streamed by editing one message. */
export interface TelegramStream {
  turnId: string;
  messageId?: number;
  text: string;
  lastEdit: number;
  timer?: NodeJS.Timeout;
  busy: Promise<void>;
}

/**
 * What a Telegram chat is shown while its turn runs: progress messages (thoughts, tool hints) and,
 * with channels.telegram.streaming, the reply streamed into one message (`streams`: the channel's
 * send makes the reply of it).
 */
export function telegramProgress(deps: { api: Api; cfg: Config["channels"]["telegram"]; log?: Logger }) {
  const { api, cfg, log } = deps;
  /** Replies being streamed by editing one message (channels.telegram.streaming). */
  const streams = new Map<string, TelegramStream>();
  /** Progress messages (thoughts, tool hints) still being sent, per chat: the next waits for them. */
  const notes = new Map<string, Promise<void>>();
  return {
    streams,
    progress(update: ProgressUpdate) {
      if (!update.sessionKey.startsWith("telegram:")) return;
      const chatId = update.sessionKey.slice("telegram:".length);
      const to = chatTarget(chatId);
      if (update.type === "tool_hint" || update.type === "thought") {
        // nanobot's progress messages: what the model said with its tool calls (already shown when streaming), then the hint as a quote.
        if (update.type === "thought" && cfg.streaming) return;
        const [html, plain] = update.type === "thought" ? [markdownToTelegramHtml(update.text), update.text] : [toolHintHtml(update.hint || update.tool), update.hint || update.tool];
        // In order, one after another per chat; plain text when Telegram refuses the HTML. Never worth failing the turn over.
        const next = (notes.get(chatId) ?? Promise.resolve())
          .then(() => api.sendMessage(to.chat, html, { parse_mode: "HTML", ...to.thread }).catch(() => api.sendMessage(to.chat, plain, to.thread)))
          .then(
            () => undefined,
            (err: unknown) => log?.debug({ err }, "progress message not sent"),
          )
          .finally(() => void (notes.get(chatId) === next && notes.delete(chatId)));
        notes.set(chatId, next);
        return;
      }
      if (!cfg.streaming) return;
      let s = streams.get(chatId);
      // A draft left by an earlier turn whose reply was never sent (the message tool sent it): it
      // stays as it is, and this turn streams into a message of its own.
      if (s && s.turnId !== update.turnId) {
        clearTimeout(s.timer);
        s = undefined;
      }
      if (!s) {
        s = { turnId: update.turnId, text: "", lastEdit: 0, busy: Promise.resolve() };
        streams.set(chatId, s);
      }
      const stream = s;
      stream.text += update.delta;
      if (stream.timer) return;
      // At most one edit a second: the first delta opens the message, later ones are gathered.
      const wait = Math.max(0, stream.lastEdit + STREAM_EDIT_EVERY_MS - Date.now());
      stream.timer = setTimeout(() => {
        stream.timer = undefined;
        stream.lastEdit = Date.now();
        const text = stream.text.slice(0, TELEGRAM_MAX_CHARS);
        stream.busy = stream.busy
          .then(async () => {
            if (stream.messageId === undefined) stream.messageId = (await api.sendMessage(to.chat, text, to.thread)).message_id;
            else await api.editMessageText(to.chat, stream.messageId, text);
          })
          .catch((err: unknown) => log?.debug({ err }, "stream edit failed"));
      }, wait);
    },
  };
}
