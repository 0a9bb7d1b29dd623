import { z } from "zod";
import { CorruptRecordError } from "../errors.js";
import { chatMessageSchema } from "../providers/messages.js";
import { KEY_END } from "../session-key.js";
import type { ListOptions, Store, StoreOp } from "./store.js";

/**
 * A turn's durable record: the latest persisted XState snapshot plus a journal. The journal, not
 * the snapshot, decides what happens to effects (DESIGN.md, "Durability rules").
 */

/**
 * The format of turn records and their journal. 1: tool calls journalled by the model's call id
 * (records without `format`); 2: by iteration and position, which are unique within a turn.
 */
export const TURN_FORMAT = 2;

/** What a turn is started with (system prompt, history, the new user message). */
export const turnInputSchema = z.object({
  turnId: z.string(),
  sessionKey: z.string(),
  channel: z.string(),
  chatId: z.string(),
  messages: z.array(chatMessageSchema),
  maxIterations: z.number().int().positive(),
  messageId: z.string().optional(),
});

/** A persisted turn-machine snapshot: checked for the parts recovery relies on, the rest kept as is. */
export const turnSnapshotSchema = z.looseObject({
  status: z.enum(["active", "done", "error", "stopped"]),
  value: z.unknown(),
  context: z.looseObject({
    turnId: z.string(),
    messages: z.array(chatMessageSchema),
    iteration: z.number().int().nonnegative(),
    seq: z.number().int().nonnegative(),
    takenIds: z.array(z.string()).default([]),
  }),
});

export const turnRecordSchema = z.object({
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
});
export type TurnRecord = z.infer<typeof turnRecordSchema>;

export const journalRecordSchema = z.discriminatedUnion("kind", [
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
]);
export type JournalRecord = z.infer<typeof journalRecordSchema>;
export type ToolJournalRecord = Extract<JournalRecord, { kind: "tool" }>;

const pad = (n: number) => String(n).padStart(6, "0");

const inputKey = (turnId: string) => `${turnId}:input`;
const storedInputSchema = z.object({ input: turnInputSchema });

/** A tool call's journal key within its turn: its position, never the model's id (providers omit and reuse ids). */
export const toolCallKey = (iteration: number, index: number) => `${pad(iteration)}:${pad(index)}`;

/**
 * One checkpoint: the record (snapshot, state) and its journal entry. The turn's input (system
 * prompt and history) never changes, so it is written once, with the first checkpoint, not with
 * every one.
 */
export function checkpointOps(record: TurnRecord, iteration: number, opts: { withInput?: boolean } = {}): StoreOp[] {
  const tokens = (record.snapshot as { context?: { usage?: { totalTokens?: unknown } } }).context?.usage?.totalTokens;
  const entry: JournalRecord = {
    kind: "state",
    turnId: record.turnId,
    seq: record.seq,
    state: record.state,
    iteration,
    at: record.updatedAt,
    ...(typeof tokens === "number" ? { tokens } : {}),
  };
  const { input, ...withoutInput } = record;
  return [
    { type: "put", sublevel: "turns", key: record.turnId, value: withoutInput },
    { type: "put", sublevel: "journal", key: `${record.turnId}:state:${pad(record.seq)}`, value: entry },
    ...(opts.withInput ? [{ type: "put" as const, sublevel: "journal" as const, key: inputKey(record.turnId), value: { input } }] : []),
  ];
}

export function toolJournalOp(record: ToolJournalRecord): StoreOp {
  const where = record.iteration !== undefined && record.index !== undefined ? toolCallKey(record.iteration, record.index) : record.callId;
  return { type: "put", sublevel: "journal", key: `${record.turnId}:tool:${where}`, value: record };
}

/** A turn's record with its input, as recovery needs it. A record from a newer troupe is refused, not guessed at. */
export async function getTurn(store: Store, turnId: string): Promise<TurnRecord | undefined> {
  const record = await store.get("turns", turnId, turnRecordSchema);
  if (record && record.format > TURN_FORMAT) {
    throw new CorruptRecordError(`turn ${turnId} was written by a newer troupe (format ${record.format}; this one reads up to ${TURN_FORMAT}): upgrade troupe to resume it`);
  }
  if (!record || record.input !== undefined) return record;
  return { ...record, input: (await store.get("journal", inputKey(turnId), storedInputSchema))?.input };
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
const openTurnSchema = z.object({ turnId: z.string(), sessionKey: z.string() });

export const openTurnOp = (turnId: string, sessionKey: string): StoreOp => ({ type: "put", sublevel: "meta", key: openKey(sessionKey, turnId), value: { turnId, sessionKey } });
export const closeTurnOp = (turnId: string, sessionKey: string): StoreOp => ({ type: "del", sublevel: "meta", key: openKey(sessionKey, turnId) });

/** Open turns, of one session or of all. */
export async function listOpenTurns(store: Store, sessionKey?: string, opts: ListOptions = {}): Promise<Array<z.infer<typeof openTurnSchema>>> {
  const prefix = sessionKey === undefined ? "open:" : `open:${sessionKey}${KEY_END}`;
  return (await store.list("meta", openTurnSchema, { prefix, ...opts })).map((r) => r.value);
}
