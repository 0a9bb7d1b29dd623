import { z } from "zod";
import { KEY_END, parseSessionKey } from "../session-key.js";
import type { Store } from "../store/store.js";
import { DeliveryRejectedError, type Channel } from "./channel.js";

/** A reply delivered to an API chat; kept so a client that lost its event stream can fetch it. */
export const apiReplySchema = z.object({
  deliveryId: z.string(),
  content: z.string(),
  media: z.array(z.string()),
  answers: z.array(z.string()),
  at: z.number(),
});
export type ApiReply = z.infer<typeof apiReplySchema>;

const pad = (n: number) => String(n).padStart(15, "0");
const prefix = (chatId: string) => `mail:${chatId}${KEY_END}`;

/** Replies delivered to an API chat, oldest first. */
export async function apiReplies(store: Store, chatId: string): Promise<ApiReply[]> {
  return (await store.list("sessions", apiReplySchema, { prefix: prefix(chatId) })).map((r) => r.value);
}

/**
 * The control API's channel. Live clients read replies from the bus as server-sent events; each
 * delivery is also kept in the chat's mailbox, keyed by its delivery id, so a repeated delivery
 * (after a crash between delivering and clearing the outbox) lands on the same entry: never twice.
 */
export function createApiChannel(store: Store): Channel {
  return {
    name: "api",
    start: async () => {},
    stop: async () => {},
    // Deliveries are store writes, independent across chats: many at once share synced batches.
    parallelChats: true,
    deliveryOps(record) {
      // An API chat is a session key; anything else (a model's message tool naming one) would be filed under another chat's mailbox prefix.
      try {
        parseSessionKey(record.chatId);
      } catch (err) {
        throw new DeliveryRejectedError((err as Error).message);
      }
      const reply: ApiReply = { deliveryId: record.deliveryId, content: record.content, media: record.media, answers: record.answers, at: record.createdAt };
      return [{ type: "put", sublevel: "sessions", key: `${prefix(record.chatId)}${pad(record.createdAt)}:${record.deliveryId}`, value: reply }];
    },
    async send(record) {
      await store.batch(this.deliveryOps!(record), { sync: true });
    },
  };
}
