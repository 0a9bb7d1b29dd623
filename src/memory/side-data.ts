import { placeholderOf } from "../context/microcompact.js";
import { forgetEncoded } from "../providers/request-body.js";
import type { ChatMessage } from "../providers/messages.js";
import { forgetMet } from "../providers/runs.js";
import { forgetCounts } from "./tokens.js";

/**
 * What is kept beside a message object, in WeakMaps keyed by it: its request bytes (request-body's
 * `encoded`), its token counts (exact and bound), its number in the runs of a list (providers/runs),
 * its microcompact placeholder and what is kept of that in turn.
 *
 * A WeakMap lets an entry go only at V8's next full collection after its key died, and V8 never
 * shrinks a WeakMap's table when a collection empties it (only `delete` does). A session's actor ends
 * (passivates) after a few idle seconds, and its next turn reads its history afresh: new objects, all
 * of them entered again. The soak (test/bench/soak.bench.ts) showed the four tables holding every
 * message of the sessions passivated since the last full collection, their size doubling with the
 * histories' length (4 × 17 MB at minute 8, the live heap 59 → 126 MB). Letting go of a passivated
 * session's entries when its actor ends keeps the tables sized to the live sessions' messages.
 * Only caches: a message met again is encoded and counted afresh.
 */
export function forgetSideData(m: ChatMessage): void {
  const placeholder = placeholderOf(m);
  if (placeholder) forgetSideData(placeholder);
  forgetEncoded(m);
  forgetCounts(m);
  forgetMet(m);
}
