/**
 * The chunks the Consolidator archives: where one ends (at a user message, so a turn is never
 * split), its text in nanobot's archive format (for the summariser, or the raw dump), and the range
 * history.jsonl says is archived.
 */
import type { ChatMessage } from "../providers/messages.js";
import type { StoredMessage } from "../store/sessions.js";
import { historyTimestamp, type HistoryEntry } from "./history-entry.js";
import { messageTokens } from "./tokens.js";

/** nanobot's limit: messages per archived chunk. */
export const MAX_CHUNK_MESSAGES = 60;
/** One message's share of the text handed to the summariser. */
const MESSAGE_MAX_CHARS = 2_000;

export interface Chunk {
  from: number;
  to: number;
}

const contentText = (m: ChatMessage): string =>
  typeof m.content === "string" ? m.content : Array.isArray(m.content) ? m.content.map((p) => (p.type === "text" ? p.text : "[image]")).join(" ") : "";

export const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}… (${text.length - max} more chars)` : text);

/** Messages as dated lines, nanobot's archive format: `[YYYY-MM-DD HH:MM] ROLE [tools: a, b]: text`. */
export function formatMessages(messages: StoredMessage[], timezone?: string, perMessage = MESSAGE_MAX_CHARS): string {
  const lines: string[] = [];
  for (const { message: m, at } of messages) {
    const stamp = historyTimestamp(new Date(at), timezone);
    const tools = m.role === "assistant" && m.tool_calls?.length ? ` [tools: ${m.tool_calls.map((c) => c.function.name).join(", ")}]` : "";
    const role = m.role === "tool" ? `TOOL ${m.name ?? ""}`.trim() : m.role.toUpperCase();
    const text = contentText(m);
    if (!text && !tools) continue;
    lines.push(`[${stamp}] ${role}${tools}: ${cut(text, perMessage)}`);
  }
  return lines.join("\n");
}

/**
 * Where the next archived chunk ends: at a user message (so the kept history starts a turn), after
 * at least `need` tokens when possible, and at most MAX_CHUNK_MESSAGES messages from `start`
 * (unless no user message comes sooner: a turn is never split). Undefined when no user message
 * follows `start`: the newest turn is never archived by the token trigger.
 */
export function pickBoundary(messages: ChatMessage[], start: number, need: number, maxMessages = MAX_CHUNK_MESSAGES): { end: number; removed: number } | undefined {
  let removed = 0;
  let last: { end: number; removed: number } | undefined;
  for (let i = start; i < messages.length; i++) {
    const m = messages[i]!;
    if (i > start && m.role === "user") {
      if (i - start > maxMessages && last) return last;
      last = { end: i, removed };
      if (removed >= need || i - start >= maxMessages) return last;
    }
    removed += messageTokens(m);
  }
  return last;
}

/** The whole tail in chunks of at most `maxMessages` that each start at a user message (for /new). */
export function tailChunks(messages: ChatMessage[], start: number, maxMessages = MAX_CHUNK_MESSAGES): Chunk[] {
  const chunks: Chunk[] = [];
  let from = start;
  while (from < messages.length) {
    const to = messages.length - from <= maxMessages ? messages.length : (pickBoundary(messages, from, Number.POSITIVE_INFINITY, maxMessages)?.end ?? messages.length);
    chunks.push({ from, to });
    from = to;
  }
  return chunks;
}

/** The newest `to` of entries that archived this session's epoch: what is archived even if the store never heard. */
export function archivedUpTo(entries: HistoryEntry[], meta: { key: string; epoch: number; createdAt: number }): number {
  let to = 0;
  for (const e of entries) {
    if (e.session_key === meta.key && e.archived?.epoch === meta.epoch && e.archived.createdAt === meta.createdAt) to = Math.max(to, e.archived.to);
  }
  return to;
}
