import type { MemoryFiles } from "./files.js";
import type { HistoryEntry } from "./history-entry.js";

/** nanobot shows at most this many undigested history entries in the system prompt. */
export const RECENT_HISTORY_MAX = 50;

/** The history entries after .dream_cursor, the newest RECENT_HISTORY_MAX of them. */
export async function recentHistory(files: MemoryFiles, max = RECENT_HISTORY_MAX): Promise<HistoryEntry[]> {
  return (await files.undigested()).slice(-max);
}
