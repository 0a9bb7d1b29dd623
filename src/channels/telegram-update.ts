import { z } from "zod";
import { fileOf } from "./telegram-context.js";

/**
 * The boundary with the Bot API: an update is parsed here before anything reads it, and who may
 * talk to the bot is decided here. An update that does not parse is dropped (the poller still
 * moves the offset past it): a field of the wrong type must cost one log line, not a failed poll
 * that would fetch the same update again and again.
 */

const userSchema = z.object({ id: z.number().int(), username: z.string().optional() });
const chatSchema = z.object({ id: z.number().int(), type: z.string(), username: z.string().optional(), is_forum: z.boolean().optional() });
const fileSchema = z.object({ file_id: z.string() });
const namedFileSchema = fileSchema.extend({ file_name: z.string().optional() });
/** The files a message may carry (src/channels/telegram-context.ts picks one, as nanobot does). */
const mediaFields = {
  photo: z.array(fileSchema).optional(),
  document: namedFileSchema.optional(),
  voice: fileSchema.optional(),
  audio: namedFileSchema.optional(),
  video: namedFileSchema.optional(),
  video_note: fileSchema.optional(),
  animation: namedFileSchema.optional(),
};

const messageSchema = z.object({
  message_id: z.number().int(),
  chat: chatSchema,
  from: userSchema.optional(),
  /** Set when the message was posted as a channel or by an anonymous group admin; `from` is then a placeholder account. */
  sender_chat: chatSchema.optional(),
  /** A forum topic's (or a private chat's thread's) id, with is_topic_message: the topic is a session of its own. */
  message_thread_id: z.number().int().optional(),
  is_topic_message: z.boolean().optional(),
  text: z.string().optional(),
  caption: z.string().optional(),
  ...mediaFields,
  location: z.object({ latitude: z.number(), longitude: z.number() }).optional(),
  // The message this one answers: quoted in the turn (its text, its file), and read to see whether a
  // group message answers the bot. A malformed one counts as none.
  reply_to_message: z
    .object({ from: z.object({ id: z.number().int(), username: z.string().optional(), first_name: z.string().optional() }).optional(), text: z.string().optional(), caption: z.string().optional(), ...mediaFields })
    .optional()
    .catch(undefined),
});
export type TelegramMessage = z.infer<typeof messageSchema>;

const updateSchema = z.object({ update_id: z.number().int() }).loose();

/** Telegram usernames are ASCII letters, digits and underscores, starting with a letter; they compare without case. */
const USERNAME = /^[A-Za-z][A-Za-z0-9_]*$/;
const ID = /^-?\d+$/;
/** Only ASCII case is folded: toLowerCase() would turn the Kelvin sign (U+212A) into "k". */
const asciiLower = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());

/**
 * channels.telegram.allowFrom read once: `*`; a numeric id; an `id|username` pair (what the logs
 * print as the sender), which grants the id only, since a username can change hands; a username,
 * with or without @. Anything else names no one and is reported.
 */
export function readAllowFrom(entries: string[]): { anyone: boolean; ids: Set<string>; usernames: Set<string>; unusable: string[] } {
  const list = { anyone: false, ids: new Set<string>(), usernames: new Set<string>(), unusable: [] as string[] };
  for (const raw of entries) {
    const entry = raw.trim();
    const [head = "", ...rest] = entry.split("|");
    if (entry === "*") list.anyone = true;
    else if (ID.test(head) && rest.length <= 1) list.ids.add(BigInt(head).toString());
    else if (rest.length === 0 && USERNAME.test(entry.replace(/^@/, ""))) list.usernames.add(asciiLower(entry.replace(/^@/, "")));
    else list.unusable.push(raw);
  }
  return list;
}

/** Whether a sender may talk to the bot: its id is granted, or its username is granted on its own (see readAllowFrom). */
export function isAllowed(sender: { id: number; username?: string }, allowFrom: string[] | ReturnType<typeof readAllowFrom>): boolean {
  const list = Array.isArray(allowFrom) ? readAllowFrom(allowFrom) : allowFrom;
  if (list.anyone) return true;
  if (Number.isSafeInteger(sender.id) && list.ids.has(String(sender.id))) return true;
  return typeof sender.username === "string" && list.usernames.has(asciiLower(sender.username));
}

export interface AdmitOptions {
  allowFrom: ReturnType<typeof readAllowFrom>;
  groupPolicy: "mention" | "open";
  /** The bot itself (from getMe): group messages must mention it or reply to it. */
  bot?: { id: number; username: string };
}

export type Admission =
  | {
      ok: true;
      updateId: number;
      message: TelegramMessage;
      /** `id|username` of the person (or, under `*`, the chat) the message is from. */
      senderId: string;
      /** The text without the bot's @mention, when a group message was addressed by one. */
      text?: string;
    }
  | {
      ok: false;
      /** Undefined when even update_id did not parse. */
      updateId?: number;
      why: "malformed" | "not a message" | "nothing to read" | "posted as a chat" | "sender not allowed" | "not addressed";
      /** What to log (never the message text). */
      detail: Record<string, unknown>;
    };

const issuesOf = (error: z.ZodError) => error.issues.map((i) => `${i.path.join(".") || "(update)"}: ${i.message}`);

/** Parses one update and decides whether it is a message the bot should take in. */
export function admit(raw: unknown, opts: AdmitOptions): Admission {
  const update = updateSchema.safeParse(raw);
  if (!update.success) return { ok: false, why: "malformed", detail: { issues: issuesOf(update.error) } };
  const updateId = update.data.update_id;
  if (!("message" in update.data)) {
    const kind = Object.keys(update.data).find((k) => k !== "update_id") ?? "nothing";
    return { ok: false, updateId, why: "not a message", detail: { kind } };
  }
  const parsed = messageSchema.safeParse(update.data.message);
  if (!parsed.success) return { ok: false, updateId, why: "malformed", detail: { issues: issuesOf(parsed.error).map((i) => `message.${i}`) } };
  const m = parsed.data;
  const where = { chatId: m.chat.id };
  if (!(m.text?.trim() || m.caption?.trim() || m.location || fileOf(m))) return { ok: false, updateId, why: "nothing to read", detail: where };

  // A message posted as a chat names no person: only `*` lets it in, and the chat is its sender.
  const sender = m.sender_chat ?? m.from;
  if (!sender) return { ok: false, updateId, why: "malformed", detail: { issues: ["message: neither from nor sender_chat"] } };
  if (m.sender_chat && !opts.allowFrom.anyone) return { ok: false, updateId, why: "posted as a chat", detail: { ...where, senderChat: m.sender_chat.id } };
  if (!isAllowed(sender, opts.allowFrom)) return { ok: false, updateId, why: "sender not allowed", detail: { from: sender.id, username: sender.username } };
  const senderId = `${sender.id}|${sender.username ?? ""}`;

  if (m.chat.type === "private" || opts.groupPolicy === "open") return { ok: true, updateId, message: m, senderId };
  const bot = opts.bot;
  const mention = bot ? new RegExp(`@${bot.username}\\b`, "i") : undefined;
  const text = m.text ?? m.caption ?? "";
  if (mention?.test(text)) return { ok: true, updateId, message: m, senderId, text: text.replace(mention, "").trim() };
  if (bot && m.reply_to_message?.from?.id === bot.id) return { ok: true, updateId, message: m, senderId };
  return { ok: false, updateId, why: "not addressed", detail: where };
}
