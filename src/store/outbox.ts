import { z } from "zod";
import type { Store, StoreOp } from "./store.js";

/** A message waiting for its channel to deliver it. Deleted only once the platform accepted it. */
export const outboxRecordSchema = z.object({
  deliveryId: z.string().min(1),
  channel: z.string().min(1),
  chatId: z.string().min(1),
  content: z.string(),
  media: z.array(z.string()).default([]),
  replyTo: z.string().optional(),
  createdAt: z.number(),
});
export type OutboxRecord = z.infer<typeof outboxRecordSchema>;

const sentMarkerSchema = z.object({ at: z.number() });
const sentKey = (deliveryId: string) => `sent:${deliveryId}`;

export const outboxPutOp = (record: OutboxRecord): StoreOp => ({ type: "put", sublevel: "outbox", key: record.deliveryId, value: record });

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
