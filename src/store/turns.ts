import { z } from "zod";
import { lazySchema } from "../lazy-schema.js";
import { CorruptRecordError } from "../errors.js";
import { chatMessageSchema, type ChatMessage } from "../providers/messages.js";
import { KEY_END } from "../session-key.js";
import { readBlobs } from "./blobs.js";
import { sessionMessagesInRange } from "./sessions.js";
import type { ListOptions, Store, StoreOp } from "./store.js";

/**
 * A turn's durable record: the latest persisted XState snapshot plus a journal. The journal, not
 * the snapshot, decides what happens to effects (DESIGN.md, "Durability rules").
 */

/**
 * The format of turn records and their journal. 1: tool calls journalled by the model's call id
 * (records without `format`); 2: by iteration and position, which are unique within a turn; 3: the
 * record's snapshot holds no messages: the turn's input is stored once and every message the turn
 * adds once, under its own key, so a checkpoint writes what its transition changed, not the history;
 * 4: the input's system prompt may be stored by content (`systemBlobs`: the keys of its chunks in the
 * `blobs` sublevel, see blobs.ts), written once however many turns carry it. Format-3 inputs hold
 * their prompt inline and are read as they are; 5: the record's snapshot leaves out what restore
 * rebuilds (see packSnapshot). Records of formats 3 and 4 hold it all and are read as they are.
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

export const journalRecordSchema = lazySchema(() => z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("state"),
    turnId: z.string(),
    seq: z.number(),
    state: z.string(),
    iteration: z.number(),
    at: z.number(),
    /** Tokens the turn had used by this checkpoint (for the inspector's timeline; absent in older records). */
    tokens: z.number().int().nonnegative().optional(),
  }),
  z.object({
    kind: z.literal("tool"),
    turnId: z.string(),
    callId: z.string(),
    /** The call's place in the turn (format 2): which model response, which call in it. */
    iteration: z.number().int().nonnegative().optional(),
    index: z.number().int().nonnegative().optional(),
    name: z.string(),
    args: z.unknown(),
    status: z.enum(["started", "completed"]),
    result: z.string().optional(),
    at: z.number(),
    /** When a completed call started (absent in older records). */
    startedAt: z.number().optional(),
  }),
  z.object({
    /** The hooks' finalizeContent on the turn's final answer: started (synced before they run), then completed with their result. */
    kind: z.literal("finalize"),
    turnId: z.string(),
    /** The seq of the `finalizing_content` checkpoint it belongs to. */
    seq: z.number().int().nonnegative(),
    status: z.enum(["started", "completed"]),
    content: z.string().optional(),
    at: z.number(),
  }),
]));
export type JournalRecord = z.infer<typeof journalRecordSchema>;
export type ToolJournalRecord = Extract<JournalRecord, { kind: "tool" }>;
export type FinalizeJournalRecord = Extract<JournalRecord, { kind: "finalize" }>;

const finalizeKey = (turnId: string, seq: number) => `${turnId}:finalize:${pad(seq)}`;

export const finalizeJournalOp = (record: FinalizeJournalRecord): StoreOp => ({ type: "put", sublevel: "journal", key: finalizeKey(record.turnId, record.seq), value: record });

/** What the journal says of the finalisation at a `finalizing_content` checkpoint (undefined: it never started). */
export async function finalizeJournal(store: Store, turnId: string, seq: number): Promise<FinalizeJournalRecord | undefined> {
  const record = await store.get("journal", finalizeKey(turnId, seq), journalRecordSchema);
  return record?.kind === "finalize" ? record : undefined;
}

const pad = (n: number) => String(n).padStart(6, "0");

const inputKey = (turnId: string) => `${turnId}:input`;
const storedInputSchema = lazySchema(() => z.object({ input: turnInputSchema }));

/** A tool call's journal key within its turn: its position, never the model's id (providers omit and reuse ids). */
export const toolCallKey = (iteration: number, index: number) => `${pad(iteration)}:${pad(index)}`;

const messageKey = (turnId: string, index: number) => `${turnId}:msg:${pad(index)}`;
const storedMessageSchema = lazySchema(() => z.object({ message: chatMessageSchema }));

/** Marks a child's input whose `messages` were the context's (the model call's), left out of the stored snapshot. */
const MESSAGES_FROM_CONTEXT = "messagesFromContext";
/**
 * Format 5: marks a child's input whose SHARED_FIELDS all equalled the context's (turn.machine.ts's
 * turnFields: every invoked child gets them), left out of the stored snapshot.
 */
const SHARED_FROM_CONTEXT = "sharedFromContext";
const SHARED_FIELDS = ["turnId", "sessionKey", "channel", "chatId", "seq", "iteration"] as const;
const SHARED = new Set<string>(SHARED_FIELDS);
/** Format 5: marks a child's input whose `calls` were the context's `pendingToolCalls` (the same array), left out. */
const CALLS_FROM_CONTEXT = "callsFromContext";

type PersistedChild = { snapshot?: { input?: Record<string, unknown> } & Record<string, unknown>; syncSnapshot?: boolean } & Record<string, unknown>;
type Persisted = TurnRecord["snapshot"] & { children?: Record<string, PersistedChild>; historyValue?: Record<string, unknown>; output?: unknown };

/**
 * The snapshot as stored: no messages in its context, nor in the input of the child invoked with
 * them (the model call), which XState would otherwise persist a second time; from format 5 neither
 * what can be rebuilt on restore: a child input's fields copied from the context (its turn fields,
 * the tool calls), XState's defaults (an empty `historyValue`, a child's `syncSnapshot: false`), nor
 * a final snapshot's `output` (a final snapshot is never restored: its batch closes the turn, and
 * its messages and reply are the session's and the outbox's). The live snapshot is not touched.
 */
export function packSnapshot(persisted: TurnRecord["snapshot"]): TurnRecord["snapshot"] {
  // Copied key by key, leaving keys out: rest destructuring, or a spread setting keys to undefined,
  // costs several times more here.
  const { children, historyValue, context, status, output } = persisted as Persisted;
  const packed: Record<string, unknown> = {};
  for (const key in persisted) {
    if (key !== "children" && key !== "historyValue" && key !== "output" && key !== "context") packed[key] = persisted[key as keyof typeof persisted];
  }
  if (!isEmpty(historyValue)) packed.historyValue = historyValue;
  if (output !== undefined && status !== "done") packed.output = output;
  // The runtime persists a context whose messages are already left out: it is not copied again.
  packed.context = context.messages.length ? { ...context, messages: [] } : context;
  const packedChildren: Record<string, PersistedChild> = {};
  for (const id in children) packedChildren[id] = packChild(children[id]!, context);
  packed.children = packedChildren;
  return packed as TurnRecord["snapshot"];
}

/** A live child actor of the turn, as XState's own persistence reads it. */
interface LiveChild {
  src: unknown;
  systemId?: string;
  _syncSnapshot?: boolean;
  getPersistedSnapshot(): unknown;
}

/** The live turn-machine snapshot's fields that persistence reads. */
export interface LiveTurnSnapshot {
  status: string;
  value: unknown;
  error?: unknown;
  output?: unknown;
  historyValue?: Record<string, unknown>;
  context: Record<string, unknown> & { messages: unknown[] };
  children: Record<string, LiveChild | undefined>;
}

/**
 * packSnapshot(machine.getPersistedSnapshot(snapshot)) in one pass, for the turn machine: its
 * context holds no actor references (XState's persistContext walk would copy none), it has no
 * history states, and its children are named by key (src is a string). XState's version
 * rest-copies the snapshot and walks the whole context on every checkpoint, the packing then copies
 * it all again; this copies the context once, its messages left out.
 */
export function persistTurnSnapshot(snap: LiveTurnSnapshot): TurnRecord["snapshot"] {
  const packed: Record<string, unknown> = { status: snap.status, error: snap.error, value: snap.value };
  if (!isEmpty(snap.historyValue)) throw new Error("the turn machine has no history states: persistTurnSnapshot cannot store a history value");
  if (snap.output !== undefined && snap.status !== "done") packed.output = snap.output;
  const context = { ...snap.context, messages: [] };
  packed.context = context;
  const children: Record<string, PersistedChild> = {};
  for (const id in snap.children) {
    const child = snap.children[id];
    if (!child) continue;
    children[id] = packChild({ snapshot: child.getPersistedSnapshot() as PersistedChild["snapshot"], src: child.src, systemId: child.systemId, syncSnapshot: child._syncSnapshot }, snap.context);
  }
  packed.children = children;
  return packed as TurnRecord["snapshot"];
}

const isEmpty = (value: object | undefined) => {
  for (const _ in value) return false;
  return true;
};

function packChild(child: PersistedChild, context: Record<string, unknown>): PersistedChild {
  const input = child.snapshot?.input;
  const out: PersistedChild = {};
  for (const key in child) if (key !== "snapshot" && (key !== "syncSnapshot" || child.syncSnapshot)) out[key] = child[key];
  if (!input) {
    if (child.snapshot) out.snapshot = child.snapshot;
    return out;
  }
  let shared = true;
  for (const key of SHARED_FIELDS) if (!(key in input) || input[key] !== context[key]) shared = false;
  const messages = Array.isArray(input.messages) && input.messages.length > 0;
  const calls = input.calls !== undefined && input.calls === context.pendingToolCalls;
  const kept: Record<string, unknown> = {};
  for (const key in input) {
    if (key === "messages" ? messages : key === "calls" ? calls : shared && SHARED.has(key)) continue;
    kept[key] = input[key];
  }
  // The context's messages, or their first n (finalizeContent's input leaves out the draft answer).
  if (messages) {
    const n = (input.messages as unknown[]).length;
    kept[MESSAGES_FROM_CONTEXT] = n < ((context.messages as unknown[] | undefined)?.length ?? 0) ? n : true;
  }
  if (shared) kept[SHARED_FROM_CONTEXT] = true;
  if (calls) kept[CALLS_FROM_CONTEXT] = true;
  out.snapshot = { ...child.snapshot, input: kept };
  return out;
}

/** The inverse of packSnapshot, given the context's messages (records of formats 3 and 4 read as they are). */
function unpackSnapshot(snapshot: TurnRecord["snapshot"], messages: ChatMessage[]): TurnRecord["snapshot"] {
  const { children = {}, historyValue = {}, ...rest } = snapshot as Persisted;
  const context = { ...snapshot.context, messages } as Record<string, unknown>;
  context.injected ??= [];
  const unpacked: Record<string, PersistedChild> = {};
  for (const [id, child] of Object.entries(children)) {
    const input = child.snapshot?.input;
    const full = { ...child, syncSnapshot: child.syncSnapshot ?? false };
    if (!input || !(input[MESSAGES_FROM_CONTEXT] || input[SHARED_FROM_CONTEXT] || input[CALLS_FROM_CONTEXT])) {
      unpacked[id] = full;
      continue;
    }
    const { [MESSAGES_FROM_CONTEXT]: fromMessages, [SHARED_FROM_CONTEXT]: fromShared, [CALLS_FROM_CONTEXT]: fromCalls, ...kept } = input;
    const restored: Record<string, unknown> = { ...kept };
    if (fromShared) for (const key of SHARED_FIELDS) restored[key] = context[key];
    if (fromMessages) restored.messages = typeof fromMessages === "number" ? messages.slice(0, fromMessages) : messages;
    if (fromCalls) restored.calls = context.pendingToolCalls;
    unpacked[id] = { ...full, snapshot: { ...child.snapshot, input: restored } };
  }
  return { ...rest, historyValue, context: context as TurnRecord["snapshot"]["context"], children: unpacked } as TurnRecord["snapshot"];
}

/**
 * One checkpoint: the record (state, a snapshot without messages: see packSnapshot) and its journal
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

/** A checkpoint's entry in the state journal (the inspector's timeline). */
export function stateJournalOp(turnId: string, at: { seq: number; state: string; iteration: number; at: number; tokens?: unknown }): StoreOp {
  const entry: JournalRecord = {
    kind: "state",
    turnId,
    seq: at.seq,
    state: at.state,
    iteration: at.iteration,
    at: at.at,
    ...(typeof at.tokens === "number" ? { tokens: at.tokens } : {}),
  };
  return { type: "put", sublevel: "journal", key: `${turnId}:state:${pad(at.seq)}`, value: entry };
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

export function toolJournalOp(record: ToolJournalRecord): StoreOp {
  const where = record.iteration !== undefined && record.index !== undefined ? toolCallKey(record.iteration, record.index) : record.callId;
  return { type: "put", sublevel: "journal", key: `${record.turnId}:tool:${where}`, value: record };
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
 * A turn's tool journal, keyed by toolCallKey(iteration, index). Format-1 records (keyed by the
 * model's call id) are under `id:<callId>`, for turns interrupted before an upgrade.
 */
export async function toolJournal(store: Store, turnId: string): Promise<Map<string, ToolJournalRecord>> {
  const rows = await store.list("journal", journalRecordSchema, { prefix: `${turnId}:tool:` });
  return new Map(
    rows.flatMap((r) => {
      if (r.value.kind !== "tool") return [];
      const { iteration, index, callId } = r.value;
      return [[iteration !== undefined && index !== undefined ? toolCallKey(iteration, index) : `id:${callId}`, r.value] as const];
    }),
  );
}

export async function stateJournal(store: Store, turnId: string): Promise<Array<Extract<JournalRecord, { kind: "state" }>>> {
  const rows = await store.list("journal", journalRecordSchema, { prefix: `${turnId}:state:` });
  return rows.flatMap((r) => (r.value.kind === "state" ? [r.value] : []));
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
 * Each session's turn summary, so `sessions list` reads one small record per session instead of
 * every turn record ever written: the newest turn's state (written with its first checkpoint and
 * its final one; while the turn is open its record says where it stands, see sessionsOverview)
 * and one marker per turn that was resumed after troupe stopped mid-turn.
 */
const lastTurnKey = (sessionKey: string) => `lastturn:${sessionKey}`;
const resumedPrefix = (sessionKey: string) => `resumed:${sessionKey}${KEY_END}`;
export const lastTurnSchema = lazySchema(() => z.object({ sessionKey: z.string(), turnId: z.string(), state: z.string(), createdAt: z.number() }));
const resumedSchema = lazySchema(() => z.object({ sessionKey: z.string(), turnId: z.string() }));

/**
 * A checkpoint's summary ops. `first: false` (a checkpoint after the turn's first, not its final
 * one): the newest-turn record is not rewritten, it already names this turn (an op and a record
 * encoded less for each of a turn's middle checkpoints).
 */
export function turnSummaryOps(record: Pick<TurnRecord, "sessionKey" | "turnId" | "state" | "createdAt" | "resumes"> & { final?: boolean }, opts: { first?: boolean } = {}): StoreOp[] {
  const { sessionKey, turnId, state, createdAt } = record;
  const ops: StoreOp[] = [];
  if (opts.first !== false || record.final) ops.push({ type: "put", sublevel: "meta", key: lastTurnKey(sessionKey), value: { sessionKey, turnId, state, createdAt } });
  if (record.resumes > 0) ops.push({ type: "put", sublevel: "meta", key: `${resumedPrefix(sessionKey)}${turnId}`, value: { sessionKey, turnId } });
  return ops;
}

/** Every session's newest turn and how many of its turns were resumed. */
export async function turnSummaries(store: Store, opts: ListOptions = {}): Promise<{ last: Map<string, z.infer<typeof lastTurnSchema>>; resumed: Map<string, number> }> {
  const last = new Map((await store.list("meta", lastTurnSchema, { prefix: "lastturn:", ...opts })).map((r) => [r.value.sessionKey, r.value] as const));
  const resumed = new Map<string, number>();
  for (const r of await store.list("meta", resumedSchema, { prefix: "resumed:", ...opts })) resumed.set(r.value.sessionKey, (resumed.get(r.value.sessionKey) ?? 0) + 1);
  return { last, resumed };
}

/** A session's summary keys (for deleting the session). */
export async function turnSummaryKeys(store: Store, sessionKey: string): Promise<string[]> {
  const resumed = await store.list("meta", z.unknown(), { prefix: resumedPrefix(sessionKey), onCorrupt: () => {} });
  const last = await store.get("meta", lastTurnKey(sessionKey), z.unknown()).catch(() => undefined);
  return [...(last !== undefined ? [lastTurnKey(sessionKey)] : []), ...resumed.map((r) => r.key)];
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
