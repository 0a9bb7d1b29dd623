import type { MemoryFiles } from "./files.js";
import type { HistoryEntry } from "./history-entry.js";

/** nanobot shows at most this many undigested history entries in the system prompt. */
export const RECENT_HISTORY_MAX = 50;

/**
 * The entries a session wrote itself. history.jsonl is shared by every chat (Dream digests all of
 * it), but a session is shown only its own: another chat's summaries would reach other users,
 * groups and cron jobs, and a legacy entry without a session key belongs to no one, so to none
 * (nanobot's MemoryStore.read_recent_history_for_prompt).
 */
export function sessionEntries(entries: HistoryEntry[], sessionKey: string): HistoryEntry[] {
  return entries.filter((e) => e.session_key === sessionKey);
}

/** The session's history entries after .dream_cursor, the newest RECENT_HISTORY_MAX of them. */
export async function recentHistory(files: MemoryFiles, sessionKey: string, max = RECENT_HISTORY_MAX): Promise<HistoryEntry[]> {
  return sessionEntries(await files.undigested(), sessionKey).slice(-max);
}
