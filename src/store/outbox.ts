import { z } from "zod";
import { lazySchema } from "../lazy-schema.js";
import { outboundEvent } from "../bus/events.js";
import type { Bus } from "../bus/index.js";
import type { Store, StoreOp } from "./store.js";

/** A message waiting for its channel to deliver it (an outbound event, stored). Deleted only once the platform accepted it. */
export const outboxRecordSchema = lazySchema(() => outboundEvent.omit({ type: true, at: true }).extend({
  createdAt: z.number(),
  /** Failed delivery attempts so far, and when to try again: a durable timer, re-armed at start. */
  attempts: z.number().int().nonnegative().default(0),
  nextAttemptAt: z.number().optional(),
  /**
   * The parts (of a message its channel sends in several: text pieces, files) the platform has
   * accepted, each written as soon as it is: a retry or a restart sends only the others.
   */
  deliveredParts: z.array(z.number().int().nonnegative()).optional(),
}));
export type OutboxRecord = z.infer<typeof outboxRecordSchema>;

/** The record with one more part accepted. */
export const withDeliveredPart = (record: OutboxRecord, index: number): OutboxRecord => ({
  ...record,
  deliveredParts: [...new Set([...(record.deliveredParts ?? []), index])].sort((a, b) => a - b),
});

const sentMarkerSchema = lazySchema(() => z.object({ at: z.number() }));
const sentKey = (deliveryId: string) => `sent:${deliveryId}`;

export const outboxPutOp = (record: OutboxRecord): StoreOp => ({ type: "put", sublevel: "outbox", key: record.deliveryId, value: record });

/** A delivery the platform refused for good (a deleted chat, a blocked bot): it leaves the outbox, marked failed. */
export function outboxRejectedOps(deliveryId: string, now: number, reason: string): StoreOp[] {
  return [
    { type: "del", sublevel: "outbox", key: deliveryId },
    { type: "put", sublevel: "meta", key: `failed:${deliveryId}`, value: { at: now, reason } },
  ];
}

/** The entry leaves the outbox and a marker stays behind, so a repeated put is recognised as already sent. */
export function outboxDeliveredOps(deliveryId: string, now: number): StoreOp[] {
  return [
    { type: "del", sublevel: "outbox", key: deliveryId },
    { type: "put", sublevel: "meta", key: sentKey(deliveryId), value: { at: now } },
  ];
}

export async function wasDelivered(store: Store, deliveryId: string): Promise<boolean> {
  return (await store.get("meta", sentKey(deliveryId), sentMarkerSchema)) !== undefined;
}

/** Pending deliveries, oldest first, optionally for one channel. */
export async function pendingOutbox(store: Store, channel?: string): Promise<OutboxRecord[]> {
  const all = (await store.list("outbox", outboxRecordSchema)).map((r) => r.value);
  return all.filter((r) => !channel || r.channel === channel).sort((a, b) => a.createdAt - b.createdAt);
}

/** Announces a stored outbox entry on the bus, for its channel actor to deliver. */
export function announce(bus: Bus | undefined, record: OutboxRecord): void {
  bus?.publish({
    type: "outbound",
    channel: record.channel,
    chatId: record.chatId,
    content: record.content,
    media: record.media,
    replyTo: record.replyTo,
    answers: record.answers,
    deliveryId: record.deliveryId,
    ...(record.alreadySent ? { alreadySent: true } : {}),
    at: record.createdAt,
  });
}

/** Stores a message for delivery (synced, atomically with `alsoOps`: the inbox entries it answers) and announces it. */
export async function queueDelivery(store: Store, bus: Bus | undefined, record: OutboxRecord, alsoOps: StoreOp[] = []): Promise<void> {
  await store.batch([outboxPutOp(record), ...alsoOps], { sync: true });
  announce(bus, record);
}
