import { z } from "zod";
import { lazySchema } from "../lazy-schema.js";
import { addUsage, chatMessageSchema, usageSchema, ZERO_USAGE, type ChatMessage, type Usage } from "../providers/messages.js";
import { deleteConsolidationStateOp } from "../memory/session-state.js";
import { KEY_END } from "../session-key.js";
import type { ListOptions, Store, StoreOp } from "./store.js";
import { listSubagents, subagentSessionKey } from "./subagents.js";
import { closeTurnOp, listOpenTurns, listTurns } from "./turns.js";
import { turnSummaryKeys } from "./turn-summaries.js";

/**
 * A session is a conversation keyed `channel:chatId`. Its messages live under the current epoch;
 * `/new` starts a new epoch and keeps the old messages.
 */

export const sessionMetaSchema = lazySchema(() => z.object({
  key: z.string(),
  epoch: z.number().int().nonnegative(),
  nextSeq: z.number().int().nonnegative(),
  createdAt: z.number(),
  updatedAt: z.number(),
  usage: usageSchema,
  turns: z.number().int().nonnegative(),
}));
export type SessionMeta = z.infer<typeof sessionMetaSchema>;

export const storedMessageSchema = lazySchema(() => z.object({
  message: chatMessageSchema,
  turnId: z.string().nullable(),
  at: z.number(),
  /** Shown to the user but never sent to the model (a failed turn's apology is troupe's words, not the model's). */
  shownOnly: z.boolean().optional(),
}));
export type StoredMessage = z.infer<typeof storedMessageSchema>;

/** Tool results are kept whole in the turn journal; the session keeps a bounded copy. */
export const HISTORY_TOOL_RESULT_CHARS = 4000;

const pad = (n: number, width: number) => String(n).padStart(width, "0");
const metaKey = (key: string) => `meta:${key}`;
/** KEY_END (never in a valid key) ends the key, so a listing of `api:a` holds nothing of `api:ab`. */
const msgKeyPrefix = (key: string) => `msg:${key}${KEY_END}`;
const msgPrefix = (key: string, epoch: number) => `${msgKeyPrefix(key)}${pad(epoch, 6)}:`;

export function newSessionMeta(key: string, now: number): SessionMeta {
  return { key, epoch: 0, nextSeq: 0, createdAt: now, updatedAt: now, usage: ZERO_USAGE, turns: 0 };
}

export async function getSessionMeta(store: Store, key: string): Promise<SessionMeta | undefined> {
  return store.get("sessions", metaKey(key), sessionMetaSchema);
}

export async function listSessions(store: Store, opts: ListOptions = {}): Promise<SessionMeta[]> {
  return (await store.list("sessions", sessionMetaSchema, { prefix: "meta:", ...opts })).map((r) => r.value);
}

function truncateForHistory(m: ChatMessage): ChatMessage {
  if (m.role !== "tool" || m.content.length <= HISTORY_TOOL_RESULT_CHARS) return m;
  const cut = m.content.length - HISTORY_TOOL_RESULT_CHARS;
  return { ...m, content: `${m.content.slice(0, HISTORY_TOOL_RESULT_CHARS)}\n... (${cut} more characters truncated)` };
}

/** Ops that append messages to a session; returns the updated meta to use for the next append. */
export function appendMessagesOps(
  meta: SessionMeta,
  messages: ChatMessage[],
  turnId: string | null,
  now: number,
  usage: Usage = ZERO_USAGE,
  countTurn = false,
  shownOnly: (index: number) => boolean = () => false,
): { ops: StoreOp[]; meta: SessionMeta } {
  const ops: StoreOp[] = messages.map((message, i) => ({
    type: "put",
    sublevel: "sessions",
    key: `${msgPrefix(meta.key, meta.epoch)}${pad(meta.nextSeq + i, 9)}`,
    value: { message: truncateForHistory(message), turnId, at: now, ...(shownOnly(i) ? { shownOnly: true } : {}) } satisfies StoredMessage,
  }));
  const next: SessionMeta = {
    ...meta,
    nextSeq: meta.nextSeq + messages.length,
    updatedAt: now,
    usage: addUsage(meta.usage, usage),
    turns: meta.turns + (countTurn ? 1 : 0),
  };
  ops.push({ type: "put", sublevel: "sessions", key: metaKey(meta.key), value: next });
  return { ops, meta: next };
}

/** `/new`: a fresh epoch; the old messages stay in the store. */
export function newEpochOps(meta: SessionMeta, now: number): { ops: StoreOp[]; meta: SessionMeta } {
  const next = { ...meta, epoch: meta.epoch + 1, nextSeq: 0, updatedAt: now };
  return { ops: [{ type: "put", sublevel: "sessions", key: metaKey(meta.key), value: next }], meta: next };
}

export async function sessionMessages(store: Store, meta: SessionMeta, epoch = meta.epoch, opts: ListOptions = {}): Promise<StoredMessage[]> {
  return (await store.list("sessions", storedMessageSchema, { prefix: msgPrefix(meta.key, epoch), ...opts })).map((r) => r.value);
}

/**
 * A stored message with its seq, as one object literal with every key: a spread (`{ ...m, seq }`)
 * gave nearly every object a V8 hidden class of its own (~180 bytes more per message, kept as long as
 * its session's actor keeps its history: test/unit/kept-message-maps.test.ts).
 */
export const withSeq = (m: StoredMessage, seq: number): StoredMessage & { seq: number } => ({ message: m.message, turnId: m.turnId, at: m.at, shownOnly: m.shownOnly, seq });

/** A session's messages of one epoch with their seq (the order they were appended in). */
export async function sessionMessagesWithSeq(store: Store, meta: SessionMeta, epoch = meta.epoch): Promise<Array<StoredMessage & { seq: number }>> {
  const prefix = msgPrefix(meta.key, epoch);
  return (await store.list("sessions", storedMessageSchema, { prefix })).map((r) => withSeq(r.value, Number(r.key.slice(prefix.length))));
}

/** A session's messages of `epoch` with seq in [fromSeq, toSeq). */
export async function sessionMessagesInRange(store: Store, key: string, epoch: number, fromSeq: number, toSeq: number): Promise<StoredMessage[]> {
  if (toSeq <= fromSeq) return [];
  const prefix = msgPrefix(key, epoch);
  const rows = await store.list("sessions", storedMessageSchema, { prefix, gte: `${prefix}${pad(fromSeq, 9)}`, lt: `${prefix}${pad(toSeq, 9)}` });
  return rows.map((r) => r.value);
}

/** Every epoch's messages (those before each /new too), oldest first, each with its epoch. */
export async function allSessionMessages(store: Store, key: string, opts: ListOptions = {}): Promise<Array<StoredMessage & { epoch: number }>> {
  const prefix = msgKeyPrefix(key);
  const rows = await store.list("sessions", storedMessageSchema, { prefix, ...opts });
  return rows.map((r) => ({ ...r.value, epoch: Number(r.key.slice(prefix.length, prefix.length + 6)) }));
}

export interface SessionDeletion {
  ops: StoreOp[];
  counts: { messages: number; turns: number; interrupted: number; inbox: number; subagents: number };
}

const anyValue = z.unknown();

/**
 * The ops that delete a session: its meta and the messages of every epoch, its turns with their
 * journal and open-turn index, its unanswered messages, the replies kept for it as an API chat, and
 * its subagents with their own transcripts. Undefined when there is nothing of it. The caller makes
 * sure no turn of it runs (the daemon refuses; without a daemon none can).
 *
 * Records in the session's own key ranges go whether or not they still read (a corrupt one is the
 * likeliest reason to delete a session); a corrupt record among all turns or subagents cannot be
 * told to be this session's, so it is skipped, not a reason to refuse.
 */
export async function deleteSessionOps(store: Store, key: string): Promise<SessionDeletion | undefined> {
  const del = (sublevel: StoreOp["sublevel"], k: string): StoreOp => ({ type: "del", sublevel, key: k });
  const keysOf = async (sublevel: StoreOp["sublevel"], prefix: string, limit?: number) => {
    const keys: string[] = [];
    const rows = await store.list(sublevel, anyValue, { prefix, limit, onCorrupt: (r) => keys.push(r.key) });
    return [...rows.map((r) => r.key), ...keys];
  };
  const skip: ListOptions = { onCorrupt: () => {} };

  // The meta key has no KEY_END: the exact key, if there, is the first under its own prefix.
  const meta = (await keysOf("sessions", metaKey(key), 1)).filter((k) => k === metaKey(key));
  const messages = await keysOf("sessions", msgKeyPrefix(key));
  // The API channel keeps an API chat's replies under mail:<chatId> (channels/api.ts); an API chat's id is its session key.
  const mail = await keysOf("sessions", `mail:${key}${KEY_END}`);
  const turns = (await listTurns(store, skip)).filter((t) => t.sessionKey === key);
  const openCorrupt: string[] = [];
  const open = await listOpenTurns(store, key, { onCorrupt: (r) => openCorrupt.push(r.key) });
  const inbox = await keysOf("inbox", `${key}${KEY_END}`);
  const subagents = (await listSubagents(store, skip)).filter((r) => r.origin.sessionKey === key);
  if (!meta.length && !messages.length && !turns.length && !open.length && !openCorrupt.length && !inbox.length && !mail.length && !subagents.length) {
    return undefined;
  }

  const ops: StoreOp[] = [...meta, ...messages, ...mail].map((k) => del("sessions", k));
  ops.push(deleteConsolidationStateOp(key));
  for (const t of turns) {
    ops.push(del("turns", t.turnId), ...(await keysOf("journal", `${t.turnId}:`)).map((k) => del("journal", k)));
  }
  ops.push(...open.map((t) => closeTurnOp(t.turnId, key)), ...openCorrupt.map((k) => del("meta", k)), ...inbox.map((k) => del("inbox", k)));
  ops.push(...(await turnSummaryKeys(store, key)).map((k) => del("meta", k)));
  for (const r of subagents) {
    ops.push(del("subagents", r.id), ...((await deleteSessionOps(store, subagentSessionKey(r.id)))?.ops ?? []));
  }
  return {
    ops,
    counts: { messages: messages.length, turns: turns.length, interrupted: open.length, inbox: inbox.length, subagents: subagents.length },
  };
}

const sizeOf = (m: ChatMessage) =>
  (typeof m.content === "string" ? m.content.length : JSON.stringify(m.content ?? "").length) +
  (m.role === "assistant" && m.tool_calls ? JSON.stringify(m.tool_calls).length : 0);

/**
 * The history handed to the model: the newest messages that fit in `maxChars`, starting at a user
 * message so no tool result or tool call is left without its partner.
 */
export function historyWindow(messages: ChatMessage[], maxChars: number): ChatMessage[] {
  let start = messages.length;
  let used = 0;
  while (start > 0) {
    const size = sizeOf(messages[start - 1] as ChatMessage);
    if (used + size > maxChars) break;
    used += size;
    start--;
  }
  while (start < messages.length && messages[start]?.role !== "user") start++;
  return messages.slice(start);
}
