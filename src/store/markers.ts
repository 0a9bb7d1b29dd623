import { z } from "zod";
import type { Store, StoreOp } from "./store.js";

/**
 * `seen:<id>` (an inbound message already taken: a platform that redelivers it is not answered
 * twice) and `sent:<deliveryId>` (a reply already delivered) only need to outlive the window in
 * which a duplicate can arrive. Older ones are pruned, so they do not pile up for ever.
 */
export const MARKER_RETENTION_MS = 7 * 24 * 3600_000;

const markerSchema = z.object({ at: z.number() });

/** Deletes markers older than the retention window; returns how many went. */
export async function pruneMarkers(store: Store, now: number, retentionMs = MARKER_RETENTION_MS): Promise<number> {
  const ops: StoreOp[] = [];
  for (const prefix of ["seen:", "sent:"]) {
    for (const { key, value } of await store.list("meta", markerSchema, { prefix, onCorrupt: () => {} })) {
      if (now - value.at > retentionMs) ops.push({ type: "del", sublevel: "meta", key });
    }
  }
  if (ops.length) await store.batch(ops, { sync: true });
  return ops.length;
}
