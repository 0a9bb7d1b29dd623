import type { ChatMessage } from "../providers/messages.js";

/**
 * nanobot's idle auto-compaction (AutoCompact, agents.defaults.idleCompactAfterMinutes): a session
 * left idle that long has all but a recent suffix of its unarchived messages archived before its
 * next turn, so the turn after a break sends their summary and the suffix, not the whole session.
 */

/** nanobot's AutoCompact._RECENT_SUFFIX_MESSAGES: the messages an idle compaction keeps. */
export const IDLE_KEEP_MESSAGES = 8;

/** Whether a session last active at `lastAt` (ms) is idle at `now` for `minutes` (0 or less: never). At the limit it is (nanobot's `>=`). */
export function isIdle(lastAt: number, now: number, minutes: number): boolean {
  if (!(minutes > 0) || !lastAt) return false;
  return now - lastAt >= minutes * 60_000;
}

/**
 * How many of `tail` (a session's unarchived, model-visible messages, oldest first) an idle
 * compaction archives: all but the last `keep`, the suffix extended back to the user message that
 * starts its turn, and never starting at a tool result whose call would be archived (nanobot's
 * Session.retain_recent_legal_suffix with extend_to_user, and find_legal_message_start). 0: nothing,
 * also when no legal suffix would be left.
 */
export function idleArchiveCount(tail: ChatMessage[], keep = IDLE_KEEP_MESSAGES): number {
  if (tail.length <= keep) return 0;
  let start = tail.length - keep;
  for (let i = start; i >= 0; i--) {
    if (tail[i]!.role === "user") {
      start = i;
      break;
    }
  }
  if (tail[start]!.role !== "user") {
    const user = tail.findIndex((m, i) => i >= start && m.role === "user");
    if (user >= 0) start = user;
  }
  const archived = start + legalStart(tail.slice(start));
  // Nothing left to keep (an orphan tool result ends the tail): compacting would archive the whole session.
  return archived >= tail.length ? 0 : archived;
}

/** The first index past every tool result whose call is not before it in `messages` (nanobot's find_legal_message_start). */
function legalStart(messages: ChatMessage[]): number {
  const declared = new Set<string>();
  let start = 0;
  messages.forEach((m, i) => {
    if (m.role === "assistant") for (const c of m.tool_calls ?? []) declared.add(c.id);
    else if (m.role === "tool" && !declared.has(m.tool_call_id)) {
      start = i + 1;
      declared.clear();
    }
  });
  return start;
}
