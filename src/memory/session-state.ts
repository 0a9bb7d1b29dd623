import { z } from "zod";
import type { Store, StoreOp } from "../store/store.js";

/**
 * How much of a session is archived in history.jsonl: `lastConsolidated` counts the messages of
 * the session's current epoch (from its start) that the Consolidator has archived. The model is
 * sent only the messages after it. Kept in LevelDB beside the session, under its own key.
 */
export const consolidationStateSchema = z.object({
  epoch: z.number().int().nonnegative(),
  lastConsolidated: z.number().int().nonnegative(),
});
export type ConsolidationState = z.infer<typeof consolidationStateSchema>;

const stateKey = (sessionKey: string) => `consolidated:${sessionKey}`;

/** The session's state for `epoch`; one of an earlier epoch (before a /new) counts as nothing archived. */
export async function getConsolidationState(store: Store, sessionKey: string, epoch: number): Promise<ConsolidationState> {
  const stored = await store.get("meta", stateKey(sessionKey), consolidationStateSchema);
  return stored && stored.epoch === epoch ? stored : { epoch, lastConsolidated: 0 };
}

export const consolidationStateOp = (sessionKey: string, state: ConsolidationState): StoreOp => ({
  type: "put",
  sublevel: "meta",
  key: stateKey(sessionKey),
  value: state,
});

export const deleteConsolidationStateOp = (sessionKey: string): StoreOp => ({ type: "del", sublevel: "meta", key: stateKey(sessionKey) });
