import { z } from "zod";
import type { Bus } from "../bus/index.js";
import type { Store } from "../store/store.js";

/** The chat a heartbeat reports to: the last one someone wrote from, kept in the store across restarts. */
export const LAST_CHAT_KEY = "cron:lastChat";
const lastChatSchema = z.object({ channel: z.string(), chatId: z.string() });
type Chat = z.infer<typeof lastChatSchema>;
const sameChat = (a: Chat | undefined, b: Chat | undefined) => a?.channel === b?.channel && a?.chatId === b?.chatId;

/**
 * Follows inbound messages from people on the channels served (`serves`) and records their chat.
 * A new chat is handed to the store at once (unsynced: it survives a kill, not a power cut); further
 * changes within the next second are written once, at its end, so a burst from many chats writes
 * twice, not once per message. Changes are compared with the last chat handed over, not the last one
 * written, so a slow write cannot leave an older chat behind.
 */
export function trackLastChat(store: Store, bus: Bus, serves: (channel: string) => boolean) {
  let queued: Chat | undefined;
  let pending: Chat | undefined;
  let timer: NodeJS.Timeout | undefined;
  let writes: Promise<void> = Promise.resolve();
  const put = (chat: Chat) => {
    queued = chat;
    writes = writes.then(() =>
      store.batch([{ type: "put", sublevel: "meta", key: LAST_CHAT_KEY, value: chat }]).then(
        () => undefined,
        () => void (queued === chat && (queued = undefined)),
      ),
    );
  };
  /** Writes the change held back in the last second, if any; resolves when every write is done. */
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    const chat = pending;
    pending = undefined;
    if (chat && !sameChat(chat, queued)) put(chat);
    return writes;
  };
  const sub = bus.ofType("inbound").subscribe((e) => {
    if (e.senderId === "cron" || e.senderId === "heartbeat" || !serves(e.channel)) return;
    const chat = { channel: e.channel, chatId: e.chatId };
    if (timer) pending = chat;
    else if (!sameChat(chat, queued)) {
      put(chat);
      timer = setTimeout(() => void flush(), 1_000).unref();
    }
  });
  return {
    /** The stored last chat, if there is one (a store failure reads as none). */
    read: () => store.get("meta", LAST_CHAT_KEY, lastChatSchema).catch(() => undefined),
    /** Stops following and writes what is held back. */
    stop: () => {
      sub.unsubscribe();
      return flush();
    },
  };
}
