import { z } from "zod";
import { lazySchema } from "../lazy-schema.js";
import { CorruptRecordError } from "../errors.js";
import { chatMessageSchema, type ChatMessage } from "../providers/messages.js";
import { KEY_END } from "../session-key.js";
import { readBlobs } from "./blobs.js";
import { sessionMessagesInRange } from "./sessions.js";
import type { ListOptions, Store, StoreOp } from "./store.js";
import { pad, stateJournalOp } from "./turn-journal.js";
import { unpackSnapshot } from "./turn-snapshot.js";

/**
 * A turn's durable record: the latest persisted XState snapshot plus a journal. The journal, not
 * the snapshot, decides what happens to effects (DESIGN.md, "Durability rules"). Here: the record,
 * its input and messages, checkpoints, the open-turn index; beside it the journal
 * (turn-journal.ts), the snapshot as stored (turn-snapshot.ts) and each session's turn summary
 * (turn-summaries.ts).
 */

/**
 * The format of turn records and their journal. 1: tool calls journalled by the model's call id
 * (records without `format`); 2: by iteration and position, which are unique within a turn; 3: the
 * record's snapshot holds no messages: the turn's input is stored once and every message the turn
 * adds once, under its own key, so a checkpoint writes what its transition changed, not the history;
 * 4: the input's system prompt may be stored by content (`systemBlobs`: the keys of its chunks in the
 * `blobs` sublevel, see blobs.ts), written once however many turns carry it. Format-3 inputs hold
 * their prompt inline and are read as they are; 5: the record's snapshot leaves out what restore
 * rebuilds (see turn-snapshot.ts's packSnapshot). Records of formats 3 and 4 hold it all and are read as they are.
 */
export const TURN_FORMAT = 5;

/** What a turn is started with (system prompt, history, the new user message). */
export const turnInputSchema = lazySchema(() => z.object({
  turnId: z.string(),
  sessionKey: z.string(),
  channel: z.string(),
  chatId: z.string(),
  messages: z.array(chatMessageSchema),
  maxIterations: z.number().int().positive(),
  messageId: z.string().optional(),
  history: z.object({ epoch: z.number().int().nonnegative(), fromSeq: z.number().int().nonnegative(), toSeq: z.number().int().nonnegative(), count: z.number().int().nonnegative() }).optional(),
  /** Format 4: the system prompt (messages[0]) is stored as these blobs, in order (blobs.ts); its stored content is empty. */
  systemBlobs: z.array(z.string()).optional(),
}));

/** A persisted turn-machine snapshot: checked for the parts recovery relies on, the rest kept as is. */
export const turnSnapshotSchema = lazySchema(() => z.looseObject({
  status: z.enum(["active", "done", "error", "stopped"]),
  value: z.unknown(),
  context: z.looseObject({
    turnId: z.string(),
    messages: z.array(chatMessageSchema),
    iteration: z.number().int().nonnegative(),
    seq: z.number().int().nonnegative(),
    takenIds: z.array(z.string()).default([]),
  }),
}));

export const turnRecordSchema = lazySchema(() => z.object({
  format: z.number().int().positive().default(1),
  turnId: z.string(),
  sessionKey: z.string(),
  /** The turn machine's state value at the last checkpoint. */
  state: z.string(),
  final: z.boolean(),
  seq: z.number().int().nonnegative(),
  snapshot: turnSnapshotSchema,
  /** The input the turn was started with, for re-creating its actor on recovery (stored once, see checkpointOps). */
  input: turnInputSchema.optional(),
  createdAt: z.number(),
  updatedAt: z.number(),
  /** How many times the turn was resumed after troupe stopped mid-turn. */
  resumes: z.number().int().nonnegative().default(0),
  /** Format 3: how many messages the snapshot's context holds (input and the turn's, each stored once). */
  messageCount: z.number().int().nonnegative().optional(),
}));
export type TurnRecord = z.infer<typeof turnRecordSchema>;
type TurnInput = z.infer<typeof turnInputSchema>;

const inputKey = (turnId: string) => `${turnId}:input`;
const storedInputSchema = lazySchema(() => z.object({ input: turnInputSchema }));

const messageKey = (turnId: string, index: number) => `${turnId}:msg:${pad(index)}`;
const storedMessageSchema = lazySchema(() => z.object({ message: chatMessageSchema }));

/**
 * One checkpoint: the record (state, a snapshot without messages: see turn-snapshot.ts) and its journal
 * entry, plus what is new since the last one: the turn's input with the first checkpoint (system
 * prompt and history, written once), and each message the turn added since, under its own key.
 */
export function checkpointOps(
  record: TurnRecord,
  iteration: number,
  opts: { withInput?: boolean; newMessages?: { from: number; messages: ChatMessage[] } } = {},
): StoreOp[] {
  const tokens = (record.snapshot as { context?: { usage?: { totalTokens?: unknown } } }).context?.usage?.totalTokens;
  const input = record.input;
  // The record without its input (stored once, below), copied key by key: a rest destructuring costs several times more.
  const withoutInput: Record<string, unknown> = {};
  for (const key in record) if (key !== "input") withoutInput[key] = record[key as keyof TurnRecord];
  const ops: StoreOp[] = [
    { type: "put", sublevel: "turns", key: record.turnId, value: withoutInput },
    stateJournalOp(record.turnId, { seq: record.seq, state: record.state, iteration, at: record.updatedAt, tokens }),
  ];
  if (opts.withInput && input) ops.push({ type: "put", sublevel: "journal", key: inputKey(record.turnId), value: { input: storedInput(input) } });
  const added = opts.newMessages;
  if (added) for (let i = 0; i < added.messages.length; i++) ops.push({ type: "put", sublevel: "journal", key: messageKey(record.turnId, added.from + i), value: { message: added.messages[i] } });
  return ops;
}

/**
 * The input as stored: a history the session holds is left out (its `history` says where it is),
 * and so is a system prompt stored by content (its `systemBlobs`, written by whoever set them).
 */
function storedInput(input: TurnInput): TurnInput {
  const count = input.history?.count ?? 0;
  const [system, ...rest] = input.messages;
  const head = system && input.systemBlobs && system.role === "system" ? { ...system, content: "" } : system;
  return { ...input, messages: [...(head ? [head] : []), ...rest.slice(count)] };
}

/** The inverse of storedInput: the prompt read back from its blobs, the history from the session it refers to. */
async function loadInput(store: Store, stored: TurnInput): Promise<TurnInput> {
  const withPrompt = await loadSystem(store, stored);
  return loadHistory(store, withPrompt);
}

async function loadSystem(store: Store, stored: TurnInput): Promise<TurnInput> {
  const [system, ...rest] = stored.messages;
  if (!stored.systemBlobs || system?.role !== "system") return stored;
  const content = await readBlobs(store, stored.systemBlobs, `turn ${stored.turnId}'s system prompt`);
  return { ...stored, messages: [{ ...system, content }, ...rest] };
}

async function loadHistory(store: Store, stored: TurnInput): Promise<TurnInput> {
  if (!stored.history) return stored;
  const { epoch, fromSeq, toSeq, count } = stored.history;
  const history = (await sessionMessagesInRange(store, stored.sessionKey, epoch, fromSeq, toSeq)).filter((m) => !m.shownOnly).map((m) => m.message);
  if (history.length !== count) {
    throw new CorruptRecordError(`turn ${stored.turnId}: its input refers to ${count} messages of session ${stored.sessionKey} but ${history.length} are stored`);
  }
  return { ...stored, messages: [...stored.messages.slice(0, 1), ...history, ...stored.messages.slice(1)] };
}

/**
 * What a finished turn no longer needs: its input and its messages (the session has them now).
 * Its record, state journal and tool journal stay, for `sessions show` and the inspector.
 */
export function pruneFinishedOps(turnId: string, messages: { from: number; to: number }, withInput = true): StoreOp[] {
  const ops: StoreOp[] = withInput ? [{ type: "del", sublevel: "journal", key: inputKey(turnId) }] : [];
  for (let i = messages.from; i < messages.to; i++) ops.push({ type: "del", sublevel: "journal", key: messageKey(turnId, i) });
  return ops;
}

/** A turn's record with its input, as recovery needs it. A record from a newer troupe is refused, not guessed at. */
export async function getTurn(store: Store, turnId: string): Promise<TurnRecord | undefined> {
  const record = await getTurnRecord(store, turnId);
  return record && withMessages(store, record);
}

/**
 * The record alone, as stored (a format-3 snapshot without its messages): one read, so it never
 * sees a turn half pruned by its final batch. For views that show the state, not the messages.
 */
export async function getTurnRecord(store: Store, turnId: string): Promise<TurnRecord | undefined> {
  const record = await store.get("turns", turnId, turnRecordSchema);
  if (record && record.format > TURN_FORMAT) {
    throw new CorruptRecordError(`turn ${turnId} was written by a newer troupe (format ${record.format}; this one reads up to ${TURN_FORMAT}): upgrade troupe to resume it`);
  }
  return record;
}

/**
 * A record as the turn runtime restores it: with its input and, from format 3 on, its snapshot's
 * messages (input's, then the turn's own from their keys). A finished turn's were pruned: its
 * record comes back as stored.
 */
export async function withMessages(store: Store, record: TurnRecord): Promise<TurnRecord> {
  const stored = record.input ?? (await store.get("journal", inputKey(record.turnId), storedInputSchema))?.input;
  const input = stored && (await loadInput(store, stored));
  if (record.messageCount === undefined || record.final) return { ...record, input };
  if (!input) return { ...record, input };
  const added = (await store.list("journal", storedMessageSchema, { prefix: `${record.turnId}:msg:` })).map((r) => r.value.message);
  return restoreMessages(record, input, added);
}

/** A format-3 record with its snapshot's messages put back: the input's, then those the turn added (in order). */
export function restoreMessages(record: TurnRecord, input: TurnInput, added: ChatMessage[]): TurnRecord {
  const count = record.messageCount ?? 0;
  const messages = [...input.messages, ...added].slice(0, count);
  if (messages.length < count) {
    throw new CorruptRecordError(`turn ${record.turnId}: its checkpoint holds ${count} messages but only ${messages.length} are stored`);
  }
  return { ...record, input, snapshot: unpackSnapshot(record.snapshot, messages) };
}

/** Every turn's record, without inputs (for listings). */
export async function listTurns(store: Store, opts: ListOptions = {}): Promise<TurnRecord[]> {
  return (await store.list("turns", turnRecordSchema, opts)).map((r) => r.value);
}

/**
 * Turns that have started and not reached a final state, indexed so that recovery at start reads
 * only these, not every turn ever run. Written with a turn's first checkpoint, removed with its last.
 */
const openKey = (sessionKey: string, turnId: string) => `open:${sessionKey}${KEY_END}${turnId}`;
const openTurnSchema = lazySchema(() => z.object({ turnId: z.string(), sessionKey: z.string() }));

export const openTurnOp = (turnId: string, sessionKey: string): StoreOp => ({ type: "put", sublevel: "meta", key: openKey(sessionKey, turnId), value: { turnId, sessionKey } });
export const closeTurnOp = (turnId: string, sessionKey: string): StoreOp => ({ type: "del", sublevel: "meta", key: openKey(sessionKey, turnId) });

/** Open turns, of one session or of all. */
export async function listOpenTurns(store: Store, sessionKey?: string, opts: ListOptions = {}): Promise<Array<z.infer<typeof openTurnSchema>>> {
  const prefix = sessionKey === undefined ? "open:" : `open:${sessionKey}${KEY_END}`;
  return (await store.list("meta", openTurnSchema, { prefix, ...opts })).map((r) => r.value);
}

/**
 * Every blob a stored turn input names (for the blob sweep). Only unfinished turns keep their input
 * (a finished turn's is pruned in its final batch); the open-turn index and the turn records are
 * both read, so a turn missing from one is still counted.
 */
export async function referencedBlobs(store: Store): Promise<Set<string>> {
  const skip: ListOptions = { onCorrupt: () => {} };
  const ids = new Set((await listOpenTurns(store, undefined, skip)).map((t) => t.turnId));
  for (const t of await listTurns(store, skip)) if (!t.final) ids.add(t.turnId);
  const refs = new Set<string>();
  for (const turnId of ids) {
    const input = await store.get("journal", inputKey(turnId), storedInputSchema).catch(() => undefined);
    for (const ref of input?.input.systemBlobs ?? []) refs.add(ref);
  }
  return refs;
}