import { z } from "zod";
import { lazySchema } from "../lazy-schema.js";
import { compareNames } from "../compare-names.js";
import { KEY_END } from "../session-key.js";
import type { Store, StoreOp } from "./store.js";

/**
 * Messages taken from a channel and not yet answered. A message is written here (synced) before
 * the channel acknowledges it, and leaves in the same atomic batch that stores its answer, so a
 * crash in between loses nothing: the session finds it here at its next start.
 */
export const inboxRecordSchema = lazySchema(() => z.object({
  id: z.string().min(1),
  sessionKey: z.string().min(1),
  channel: z.string().min(1),
  chatId: z.string().min(1),
  senderId: z.string(),
  content: z.string(),
  media: z.array(z.string()).default([]),
  at: z.number(),
}));
export type InboxRecord = z.infer<typeof inboxRecordSchema>;

/** KEY_END (never in a valid key) ends the session key, so one session's listing holds no other's messages. */
const key = (sessionKey: string, id: string) => `${sessionKey}${KEY_END}${id}`;
const seenKey = (id: string) => `seen:${id}`;

/** Marks a platform message id as taken in (what wasSeen reads). */
export const seenOp = (id: string, at: number): StoreOp => ({ type: "put", sublevel: "meta", key: seenKey(id), value: { at } });

/** A message's inbox id: its channel and the id the platform or client gave it (an API client's Idempotency-Key). */
export const inboxId = (channel: string, messageId: string) => `${channel}:${messageId}`;

/**
 * The write that takes a message in; `seen` stays behind so a redelivered message is recognised,
 * also under `alsoSeen` (the other ids the message stands for: a Telegram album's later items).
 */
export function inboxPutOps(record: InboxRecord, alsoSeen: string[] = []): StoreOp[] {
  return [{ type: "put", sublevel: "inbox", key: key(record.sessionKey, record.id), value: record }, seenOp(record.id, record.at), ...alsoSeen.map((id) => seenOp(id, record.at))];
}

export const inboxDeleteOps = (sessionKey: string, ids: string[]): StoreOp[] =>
  ids.map((id) => ({ type: "del", sublevel: "inbox", key: key(sessionKey, id) }));

export async function wasSeen(store: Store, id: string): Promise<boolean> {
  return (await store.get("meta", seenKey(id), z.object({ at: z.number() }))) !== undefined;
}

/** A session's unanswered messages, oldest first. */
export async function sessionInbox(store: Store, sessionKey: string): Promise<InboxRecord[]> {
  const rows = await store.list("inbox", inboxRecordSchema, { prefix: `${sessionKey}${KEY_END}` });
  return rows.map((r) => r.value).sort((a, b) => a.at - b.at || compareNames(a.id, b.id));
}

/** Sessions with unanswered messages (to wake at start), optionally only messages that pass `which`. */
export async function sessionsWithInbox(store: Store, which: (m: InboxRecord) => boolean = () => true): Promise<string[]> {
  const rows = await store.list("inbox", inboxRecordSchema);
  return [...new Set(rows.filter((r) => which(r.value)).map((r) => r.value.sessionKey))];
}
