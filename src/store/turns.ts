import { z } from "zod";
import type { ListOptions, Store, StoreOp } from "./store.js";

/**
 * A turn's durable record: the latest persisted XState snapshot plus a journal. The journal, not
 * the snapshot, decides what happens to effects (DESIGN.md, "Durability rules").
 */

export const turnRecordSchema = z.object({
  turnId: z.string(),
  sessionKey: z.string(),
  /** The turn machine's state value at the last checkpoint. */
  state: z.string(),
  final: z.boolean(),
  seq: z.number().int().nonnegative(),
  snapshot: z.unknown(),
  /** The input the turn was started with, for re-creating its actor on recovery (stored once, see checkpointOps). */
  input: z.unknown().optional(),
  createdAt: z.number(),
  updatedAt: z.number(),
  /** How many times the turn was resumed after troupe stopped mid-turn. */
  resumes: z.number().int().nonnegative().default(0),
});
export type TurnRecord = z.infer<typeof turnRecordSchema>;

export const journalRecordSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("state"), turnId: z.string(), seq: z.number(), state: z.string(), iteration: z.number(), at: z.number() }),
  z.object({
    kind: z.literal("tool"),
    turnId: z.string(),
    callId: z.string(),
    name: z.string(),
    args: z.unknown(),
    status: z.enum(["started", "completed"]),
    result: z.string().optional(),
    at: z.number(),
  }),
]);
export type JournalRecord = z.infer<typeof journalRecordSchema>;
export type ToolJournalRecord = Extract<JournalRecord, { kind: "tool" }>;

const pad = (n: number) => String(n).padStart(6, "0");

const inputKey = (turnId: string) => `${turnId}:input`;
const storedInputSchema = z.object({ input: z.unknown() });

/**
 * One checkpoint: the record (snapshot, state) and its journal entry. The turn's input (system
 * prompt and history) never changes, so it is written once, with the first checkpoint, not with
 * every one.
 */
export function checkpointOps(record: TurnRecord, iteration: number, opts: { withInput?: boolean } = {}): StoreOp[] {
  const entry: JournalRecord = { kind: "state", turnId: record.turnId, seq: record.seq, state: record.state, iteration, at: record.updatedAt };
  const { input, ...withoutInput } = record;
  return [
    { type: "put", sublevel: "turns", key: record.turnId, value: withoutInput },
    { type: "put", sublevel: "journal", key: `${record.turnId}:state:${pad(record.seq)}`, value: entry },
    ...(opts.withInput ? [{ type: "put" as const, sublevel: "journal" as const, key: inputKey(record.turnId), value: { input } }] : []),
  ];
}

export function toolJournalOp(record: ToolJournalRecord): StoreOp {
  return { type: "put", sublevel: "journal", key: `${record.turnId}:tool:${record.callId}`, value: record };
}

/** A turn's record with its input, as recovery needs it. */
export async function getTurn(store: Store, turnId: string): Promise<TurnRecord | undefined> {
  const record = await store.get("turns", turnId, turnRecordSchema);
  if (!record || record.input !== undefined) return record;
  return { ...record, input: (await store.get("journal", inputKey(turnId), storedInputSchema))?.input };
}

/** Every turn's record, without inputs (for listings). */
export async function listTurns(store: Store, opts: ListOptions = {}): Promise<TurnRecord[]> {
  return (await store.list("turns", turnRecordSchema, opts)).map((r) => r.value);
}

export async function toolJournal(store: Store, turnId: string): Promise<Map<string, ToolJournalRecord>> {
  const rows = await store.list("journal", journalRecordSchema, { prefix: `${turnId}:tool:` });
  return new Map(rows.flatMap((r) => (r.value.kind === "tool" ? [[r.value.callId, r.value] as const] : [])));
}

export async function stateJournal(store: Store, turnId: string): Promise<Array<Extract<JournalRecord, { kind: "state" }>>> {
  const rows = await store.list("journal", journalRecordSchema, { prefix: `${turnId}:state:` });
  return rows.flatMap((r) => (r.value.kind === "state" ? [r.value] : []));
}

/**
 * Turns that have started and not reached a final state, indexed so that recovery at start reads
 * only these, not every turn ever run. Written with a turn's first checkpoint, removed with its last.
 */
const openKey = (sessionKey: string, turnId: string) => `open:${sessionKey}\x00${turnId}`;
const openTurnSchema = z.object({ turnId: z.string(), sessionKey: z.string() });

export const openTurnOp = (turnId: string, sessionKey: string): StoreOp => ({ type: "put", sublevel: "meta", key: openKey(sessionKey, turnId), value: { turnId, sessionKey } });
export const closeTurnOp = (turnId: string, sessionKey: string): StoreOp => ({ type: "del", sublevel: "meta", key: openKey(sessionKey, turnId) });

/** Open turns, of one session or of all. */
export async function listOpenTurns(store: Store, sessionKey?: string, opts: ListOptions = {}): Promise<Array<z.infer<typeof openTurnSchema>>> {
  const prefix = sessionKey === undefined ? "open:" : `open:${sessionKey}\x00`;
  return (await store.list("meta", openTurnSchema, { prefix, ...opts })).map((r) => r.value);
}
