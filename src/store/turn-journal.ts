import { z } from "zod";
import { lazySchema } from "../lazy-schema.js";
import type { Store, StoreOp } from "./store.js";

/**
 * A turn's journal (the `journal` sublevel, keys under the turn's id): one entry per checkpoint
 * (the inspector's timeline), each tool call's start and result, the hooks' finalisation of the
 * answer. It, not the turn's snapshot, decides what happens to effects (DESIGN.md, "Durability rules").
 */

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

/** Sequence numbers in keys, padded so that keys sort in their order. */
export const pad = (n: number) => String(n).padStart(6, "0");

/** A tool call's journal key within its turn: its position, never the model's id (providers omit and reuse ids). */
export const toolCallKey = (iteration: number, index: number) => `${pad(iteration)}:${pad(index)}`;

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

export function toolJournalOp(record: ToolJournalRecord): StoreOp {
  const where = record.iteration !== undefined && record.index !== undefined ? toolCallKey(record.iteration, record.index) : record.callId;
  return { type: "put", sublevel: "journal", key: `${record.turnId}:tool:${where}`, value: record };
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
