import { extname } from "node:path";
import { GrammyError, InputFile, type Api } from "grammy";
import { isMediaUrl } from "./channel.js";
import { chatTarget } from "./telegram-context.js";
import { markdownToTelegramHtml, splitMessage, TELEGRAM_MAX_CHARS } from "./telegram-format.js";

/** Room for HTML escaping: markdown is split below Telegram's limit, then converted. */
export const SPLIT_AT = TELEGRAM_MAX_CHARS - 600;

/** One part of a reply (at most SPLIT_AT characters of markdown) as HTML, or plain if Telegram refuses the HTML. */
export async function sendPart(api: Api, chatId: string, part: string, replyTo?: number) {
  const { chat, thread } = chatTarget(chatId);
  const reply = { ...thread, ...(replyTo ? { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } } : {}) };
  const html = markdownToTelegramHtml(part);
  try {
    if (html.length > TELEGRAM_MAX_CHARS) throw new GrammyError("too long after escaping", { ok: false, error_code: 400, description: "message is too long" }, "sendMessage", {});
    await api.sendMessage(chat, html, { parse_mode: "HTML", link_preview_options: { is_disabled: true }, ...reply });
  } catch (err) {
    if (!(err instanceof GrammyError) || err.error_code !== 400 || !/parse entities|too long/i.test(err.description)) throw err;
    // Telegram refused the HTML: the same text, plain.
    for (const plain of splitMessage(part, TELEGRAM_MAX_CHARS)) await api.sendMessage(chat, plain, reply);
  }
}

/** Puts the final reply into the streamed message; false when it does not fit in one (it is then sent normally). */
export async function finishStream(api: Api, chatId: string, messageId: number, markdown: string): Promise<boolean> {
  const { chat } = chatTarget(chatId);
  const html = markdownToTelegramHtml(markdown);
  if (html.length > TELEGRAM_MAX_CHARS) {
    await api.deleteMessage(chat, messageId).catch(() => undefined);
    return false;
  }
  try {
    await api.editMessageText(chat, messageId, html, { parse_mode: "HTML", link_preview_options: { is_disabled: true } });
  } catch (err) {
    if (!(err instanceof GrammyError) || err.error_code !== 400) throw err;
    if (/not modified/i.test(err.description)) return true;
    await api.editMessageText(chat, messageId, markdown);
  }
  return true;
}

const IMAGE_EXTS = [".jpg", ".jpeg", ".png", ".gif", ".webp"];

/** Sends one media entry: an image as a photo, anything else as a document; a URL is given to Telegram to fetch, a path is uploaded. */
export function sendMedia(api: Api, chatId: string, media: string) {
  const { chat, thread } = chatTarget(chatId);
  const url = isMediaUrl(media);
  const file = url ? media : new InputFile(media);
  const ext = extname(url ? new URL(media).pathname : media).toLowerCase();
  return IMAGE_EXTS.includes(ext) ? api.sendPhoto(chat, file, thread) : api.sendDocument(chat, file, thread);
}
