import type { ChatMessage } from "./providers/messages.js";

/** /history's default and largest count, and how much of each message it shows (nanobot's). */
export const HISTORY_DEFAULT = 10;
export const HISTORY_MAX = 50;
export const HISTORY_MESSAGE_CHARS = 200;

/** One message as /history shows it, or undefined for what it leaves out (tool calls and results, empty messages). */
function historyLine(message: ChatMessage): string | undefined {
  if (message.role !== "user" && message.role !== "assistant") return undefined;
  const content = message.content;
  const text = (typeof content === "string" ? content : Array.isArray(content) ? content.flatMap((p) => (p.type === "text" && typeof p.text === "string" ? [p.text] : [])).join(" ") : "").trim();
  if (!text) return undefined;
  const shown = text.length > HISTORY_MESSAGE_CHARS ? `${text.slice(0, HISTORY_MESSAGE_CHARS)}…` : text;
  return `${message.role === "user" ? "👤 You" : "🤖 Bot"}: ${shown}`;
}

/** nanobot's /history [count]: the session's last messages (default 10, at most 50), each cut at 200 characters. */
export function historyAnswer(messages: ChatMessage[], args: string): string {
  let count = HISTORY_DEFAULT;
  if (args.trim()) {
    const n = Number(args.trim());
    if (!Number.isInteger(n)) return `Usage: /history [count] — e.g. /history 5 (default: ${HISTORY_DEFAULT}, max: ${HISTORY_MAX})`;
    count = Math.max(1, Math.min(n, HISTORY_MAX));
  }
  const recent = messages.flatMap((m) => historyLine(m) ?? []).slice(-count);
  if (!recent.length) return "No conversation history yet.";
  return [`Last ${recent.length} message(s):`, ...recent].join("\n");
}

/** nanobot's /skill: the enabled skills, name and description, no paths. */
export function skillsAnswer(skills: Array<{ name: string; description: string }>): string {
  if (!skills.length) return "No skills available.";
  return [`Available skills (${skills.length}):`, "", ...skills.map((s) => `- **${s.name}** — ${s.description}`)].join("\n");
}
