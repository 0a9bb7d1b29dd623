import type { ParsedToolCall } from "../providers/messages.js";

/** How many times one URL may be fetched, or one query searched, in a turn (nanobot's _MAX_REPEAT_EXTERNAL_LOOKUPS). */
export const MAX_REPEATED_LOOKUPS = 2;

/** What nanobot answers a lookup past the limit with, instead of making the request again. */
export const REPEATED_LOOKUP_NOTE =
  "Error: repeated external lookup blocked. Use the results you already have to answer, or try a meaningfully different source.\n\n" +
  "[Analyze the error above and try a different approach.]";

/** The target of an outside lookup (web_fetch's URL, web_search's query), case-insensitive; undefined for any other call. */
export function lookupSignature(name: string, args: unknown): string | undefined {
  if (!args || typeof args !== "object") return undefined;
  const a = args as Record<string, unknown>;
  const text = (v: unknown) => (typeof v === "string" || typeof v === "number" ? String(v).trim().toLowerCase() : "");
  if (name === "web_fetch") return text(a.url) ? `web_fetch:${text(a.url)}` : undefined;
  if (name === "web_search") {
    const query = text(a.query) || text(a.search_term);
    return query ? `web_search:${query}` : undefined;
  }
  return undefined;
}

/**
 * The calls of a model response that repeat a lookup more than MAX_REPEATED_LOOKUPS times in the
 * turn, by position. `earlier` are the turn's calls before this response (its tool journal, which
 * survives a restart, so the count does too); within the response, calls count in order.
 */
export function repeatedLookups(earlier: Array<{ name: string; args: unknown }>, calls: ParsedToolCall[]): Set<number> {
  const seen = new Map<string, number>();
  const count = (signature: string) => {
    const n = (seen.get(signature) ?? 0) + 1;
    seen.set(signature, n);
    return n;
  };
  for (const call of earlier) {
    const signature = lookupSignature(call.name, call.args);
    if (signature) count(signature);
  }
  const blocked = new Set<number>();
  calls.forEach((call, index) => {
    const signature = lookupSignature(call.name, call.arguments);
    if (signature && count(signature) > MAX_REPEATED_LOOKUPS) blocked.add(index);
  });
  return blocked;
}
