import type { HistoryEntry } from "./history-entry.js";
import { textTokens, textTokensBound } from "./tokens.js";

/** nanobot shows at most this many undigested history entries in the system prompt. */
export const RECENT_HISTORY_MAX = 50;

/**
 * What a session's Recent History shows of the undigested entries (after .dream_cursor): those it
 * wrote itself, the newest `max`. history.jsonl is shared by every chat (Dream digests all of it),
 * but a session is shown only its own: another chat's summaries would reach other users, groups and
 * cron jobs, and a legacy entry without a session key belongs to no one, so to none (nanobot's
 * MemoryStore.read_recent_history_for_prompt).
 */
export function recentFor(undigested: HistoryEntry[], sessionKey: string, max = RECENT_HISTORY_MAX): HistoryEntry[] {
  return undigested.filter((e) => e.session_key === sessionKey).slice(-max);
}

/** nanobot's cap on the Recent History section (ContextBuilder._MAX_HISTORY_TOKENS). */
export const RECENT_HISTORY_MAX_TOKENS = 8_000;
/** What ends an entry cut to fit (nanobot's truncate_text_to_tokens suffix). */
export const TRUNCATED = "\n... (truncated)";
const HEADING = "# Recent History\n\n";

type HistoryLine = Pick<HistoryEntry, "timestamp" | "content">;
const lineOf = (e: HistoryLine) => `- [${e.timestamp}] ${e.content}`;
// Not "memory/history.jsonl has them": that file holds every chat's entries, not this one's.
const leftOut = (n: number, maxTokens: number) =>
  `- (${n} older ${n === 1 ? "entry" : "entries"} of this chat left out to keep this section within ${maxTokens} tokens)`;

/** The longest head of `text` within `maxTokens` (a first cut in proportion, then shorter until it fits). */
function headWithin(text: string, maxTokens: number): string {
  const total = textTokens(text);
  if (total <= maxTokens) return text;
  let end = Math.floor((text.length * Math.max(0, maxTokens)) / total);
  while (end > 0 && textTokens(text.slice(0, end)) > maxTokens) end = Math.floor(end * 0.95);
  // Not half of a surrogate pair.
  if (end > 0 && /[\uD800-\uDBFF]/.test(text[end - 1]!)) end--;
  return text.slice(0, end);
}

/**
 * The Recent History section for `entries` (oldest first), at most `maxTokens` tokens: 50 raw dumps
 * could make a prompt of hundreds of thousands of tokens. nanobot cuts the joined text's tail, which
 * drops the newest entries; troupe keeps the newest whole and says how many older ones it left out,
 * and an entry alone over the cap keeps its head, marked as truncated.
 */
export function recentHistorySection(entries: HistoryLine[], maxTokens = RECENT_HISTORY_MAX_TOKENS): string | undefined {
  if (!entries.length) return undefined;
  const lines = entries.map(lineOf);
  const whole = HEADING + lines.join("\n");
  // Bytes bound tokens: a small section needs no tokenizer.
  if (textTokensBound(whole) <= maxTokens || textTokens(whole) <= maxTokens) return whole;
  const room = maxTokens - textTokens(HEADING) - textTokens(leftOut(lines.length, maxTokens)) - 1;
  let kept = 0;
  for (let used = 0; kept < lines.length; kept++) {
    used += textTokens(lines[lines.length - 1 - kept]!) + 1;
    if (used > room) break;
  }
  const build = (n: number) => HEADING + [leftOut(lines.length - n, maxTokens), ...lines.slice(lines.length - n)].join("\n");
  // Counted line by line; the joined text may differ by a token here and there.
  while (kept > 0 && textTokens(build(kept)) > maxTokens) kept--;
  if (kept > 0) return build(kept);
  const newest = lines.length - 1;
  const head = newest ? HEADING + leftOut(newest, maxTokens) + "\n" : HEADING;
  let budget = maxTokens - textTokens(head) - textTokens(TRUNCATED);
  let section = head + headWithin(lines[newest]!, budget) + TRUNCATED;
  while (budget > 0 && textTokens(section) > maxTokens) section = head + headWithin(lines[newest]!, (budget -= 8)) + TRUNCATED;
  return section;
}
