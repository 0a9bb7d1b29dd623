
/**
 * What a Telegram message says beyond its own text, put into the turn's content as nanobot does
 * (nanobot/channels/telegram/runtime.py): where it was sent from, which earlier message it replies to,
 * and which of its fields is the file to download.
 */

export interface TelegramFile {
  file_id: string;
  file_name?: string;
}

/** The message fields that carry a file, in nanobot's order of preference (one file per message). */
export const MEDIA_FIELDS = ["photo", "voice", "audio", "document", "video", "video_note", "animation"] as const;
type MediaField = (typeof MEDIA_FIELDS)[number];
export type MediaCarrier = { photo?: TelegramFile[] } & Partial<Record<Exclude<MediaField, "photo">, TelegramFile>>;

/** The file a message carries: which, its name to save under, and the label its line in the content gets. */
export function fileOf(m: MediaCarrier): { field: MediaField; fileId: string; name: string; label: string } | undefined {
  if (m.photo?.length) return { field: "photo", fileId: m.photo.at(-1)!.file_id, name: "photo.jpg", label: "image" };
  if (m.voice) return { field: "voice", fileId: m.voice.file_id, name: "voice.ogg", label: "voice message" };
  if (m.audio) return { field: "audio", fileId: m.audio.file_id, name: m.audio.file_name ?? "audio.mp3", label: "audio" };
  if (m.document) return { field: "document", fileId: m.document.file_id, name: m.document.file_name ?? "file", label: `file ${m.document.file_name ?? ""}`.trim() };
  if (m.video) return { field: "video", fileId: m.video.file_id, name: m.video.file_name ?? "video.mp4", label: "video" };
  if (m.video_note) return { field: "video_note", fileId: m.video_note.file_id, name: "video.mp4", label: "video" };
  if (m.animation) return { field: "animation", fileId: m.animation.file_id, name: m.animation.file_name ?? "animation.mp4", label: "animation" };
  return undefined;
}

/** A shared location: `[location: lat, lon]`. */
export const locationLine = (location: { latitude: number; longitude: number }) => `[location: ${location.latitude}, ${location.longitude}]`;

export interface RepliedTo {
  text?: string;
  caption?: string;
  from?: { id: number; username?: string; first_name?: string };
}

/** How much of the message replied to is quoted (nanobot's TELEGRAM_REPLY_CONTEXT_MAX_LEN). */
export const REPLY_QUOTE_CHARS = 4_000;

/**
 * The tag for the message replied to: its text (or caption), cut at REPLY_QUOTE_CHARS, and who
 * wrote it: `[Reply to bot: …]`, `[Reply to @name: …]`, `[Reply to First: …]` or `[Reply to: …]`. Without
 * text, the line of its downloaded file (`[Reply to: [image: …]]`); undefined when there is neither.
 */
export function replyTag(reply: RepliedTo, botId: number | undefined, fileLine?: string): string | undefined {
  let text = reply.text || reply.caption || "";
  if (!text) return fileLine ? `[Reply to: ${fileLine}]` : undefined;
  if (text.length > REPLY_QUOTE_CHARS) text = `${text.slice(0, REPLY_QUOTE_CHARS)}...`;
  const from = reply.from;
  if (from && botId !== undefined && from.id === botId) return `[Reply to bot: ${text}]`;
  if (from?.username) return `[Reply to @${from.username}: ${text}]`;
  if (from?.first_name) return `[Reply to ${from.first_name}: ${text}]`;
  return `[Reply to: ${text}]`;
}

/**
 * The chat id troupe keys a Telegram conversation by: the chat, and its forum topic (a supergroup's
 * topic, or a private chat's thread in threaded mode) when the message is in one: `-100123:topic:42`,
 * so the session key is nanobot's (`telegram:-100123:topic:42`) and each topic is a session of its own.
 * A reply thread of an ordinary group (a message_thread_id without is_topic_message) is not a topic.
 */
export function chatKeyOf(m: { chat: { id: number; is_forum?: boolean }; message_thread_id?: number; is_topic_message?: boolean }): string {
  const topic = m.message_thread_id !== undefined && (m.is_topic_message === true || m.chat.is_forum === true);
  return topic ? `${m.chat.id}:topic:${m.message_thread_id}` : String(m.chat.id);
}

/** A chat id (chatKeyOf) as the Bot API takes it: the chat, and the topic to send into (`message_thread_id`). */
export function chatTarget(chatId: string): { chat: string; thread: { message_thread_id?: number } } {
  const [, chat, topic] = /^(-?\d+):topic:(\d+)$/.exec(chatId) ?? [];
  return chat ? { chat, thread: { message_thread_id: Number(topic) } } : { chat: chatId, thread: {} };
}
