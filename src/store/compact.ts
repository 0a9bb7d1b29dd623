import { z } from "zod";
import type { Store, StoreOp } from "./store.js";
import { listTurns } from "./turns.js";

/** When a finished turn's journal is folded into its summary (config `storage.compactTurnsAfterDays`, `storage.keepTurnJournals`). */
export interface CompactionPolicy {
  /** Finished turns older than this many days are compacted. */
  afterDays: number;
  /** Beyond this many most recent finished turns, older ones are compacted whatever their age. */
  keepTurns: number;
}

/** The compacted form of a turn's journal: what the inspector's turn view shows. */
const summaryKey = (turnId: string) => `${turnId}:summary`;
const summarySchema = z.object({ kind: z.literal("summary"), view: z.looseObject({ turnId: z.string() }) });

/** A compacted turn's stored view (undefined for a turn whose journal is still whole). */
export async function compactedView(store: Store, turnId: string): Promise<Record<string, unknown> | undefined> {
  return (await store.get("journal", summaryKey(turnId), summarySchema))?.view;
}

/** Turns compacted per synced batch. */
const BATCH_TURNS = 200;

/**
 * Folds finished turns' journals (every checkpoint's state entry, every tool call's arguments and
 * result, hook runs) into one summary record holding `view(turnId)`, the inspector's view of the
 * turn (checkpoint timeline, tool names, timings, redacted hints and previews). The turn record
 * (final state, usage, error) stays. Open turns are never touched: recovery needs their journal
 * whole. Returns how many turns were compacted.
 */
export async function compactTurns(
  store: Store,
  now: number,
  policy: CompactionPolicy,
  view: (turnId: string) => Promise<Record<string, unknown> | undefined>,
): Promise<number> {
  const finished = (await listTurns(store, { onCorrupt: () => {} })).filter((t) => t.final).sort((a, b) => b.updatedAt - a.updatedAt);
  const cutoff = now - policy.afterDays * 86_400_000;
  let compacted = 0;
  let ops: StoreOp[] = [];
  let pending = 0;
  const flush = async () => {
    if (ops.length) await store.batch(ops, { sync: true });
    compacted += pending;
    ops = [];
    pending = 0;
  };
  for (const [i, turn] of finished.entries()) {
    if (i < policy.keepTurns && turn.updatedAt >= cutoff) continue;
    const keys = (await store.list("journal", z.unknown(), { prefix: `${turn.turnId}:`, onCorrupt: () => {} })).map((r) => r.key);
    const journal = keys.filter((k) => k !== summaryKey(turn.turnId));
    if (!journal.length) continue;
    const summary = await view(turn.turnId);
    if (!summary) continue;
    ops.push(...journal.map((key): StoreOp => ({ type: "del", sublevel: "journal", key })));
    ops.push({ type: "put", sublevel: "journal", key: summaryKey(turn.turnId), value: { kind: "summary", view: summary } });
    if (++pending >= BATCH_TURNS) await flush();
  }
  await flush();
  return compacted;
}
