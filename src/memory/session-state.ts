import { z } from "zod";
import { lazySchema } from "../lazy-schema.js";
import type { Store, StoreOp } from "../store/store.js";

/**
 * How much of a session is archived in history.jsonl: `lastConsolidated` counts the messages of
 * the session's current epoch (from its start) that the Consolidator has archived. The model is
 * sent only the messages after it. Kept in LevelDB beside the session, under its own key.
 */
export const consolidationStateSchema = lazySchema(() => z.object({
  epoch: z.number().int().nonnegative(),
  lastConsolidated: z.number().int().nonnegative(),
  /** The session's createdAt: a deleted and recreated session under the same key starts afresh. */
  createdAt: z.number(),
}));
export type ConsolidationState = z.infer<typeof consolidationStateSchema>;

const stateKey = (sessionKey: string) => `consolidated:${sessionKey}`;

/** The state of the session's current epoch; one of an earlier epoch (before a /new) or session counts as nothing archived. */
export async function getConsolidationState(store: Store, meta: { key: string; epoch: number; createdAt: number }): Promise<ConsolidationState> {
  const stored = await store.get("meta", stateKey(meta.key), consolidationStateSchema);
  return stored && stored.epoch === meta.epoch && stored.createdAt === meta.createdAt ? stored : { epoch: meta.epoch, lastConsolidated: 0, createdAt: meta.createdAt };
}

export const consolidationStateOp = (sessionKey: string, state: ConsolidationState): StoreOp => ({
  type: "put",
  sublevel: "meta",
  key: stateKey(sessionKey),
  value: state,
});

export const deleteConsolidationStateOp = (sessionKey: string): StoreOp => ({ type: "del", sublevel: "meta", key: stateKey(sessionKey) });
