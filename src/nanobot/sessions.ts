import { chatMessageSchema, toolCallSchema, type ChatMessage } from "../providers/messages.js";
import { parseSessionKey } from "../session-key.js";

/**
 * A nanobot session file (nanobot/session/manager.py, v0.1.3–v0.3.0): `<key with ':' as '_'>.jsonl`,
 * a metadata line `{"_type":"metadata","key","created_at","updated_at","metadata","last_consolidated"}`,
 * then one message a line in the OpenAI shape plus nanobot's extras (timestamp, media, ...).
 */
export interface NanobotSession {
  key: string;
  createdAt: number | undefined;
  updatedAt: number | undefined;
  /** The messages nanobot had archived to its memory (its last_consolidated, counted in what is kept here). */
  lastConsolidated: number;
  messages: Array<{ message: ChatMessage; at: number | undefined }>;
  /** Lines left out, each said with its line number and why. */
  skipped: string[];
}

/** A Python isoformat time (naive: the local time nanobot ran in, as JavaScript reads one too), or undefined. */
export function parseIsoTime(value: unknown): number | undefined {
  if (typeof value !== "string" || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(value)) return undefined;
  // Python writes microseconds: JavaScript reads at most milliseconds.
  const ms = Date.parse(value.replace(/(\.\d{3})\d+/, "$1"));
  return Number.isNaN(ms) ? undefined : ms;
}

const text = (v: unknown): string => (typeof v === "string" ? v : v === null || v === undefined ? "" : JSON.stringify(v));

/** nanobot's message dict as a troupe chat message, or why it cannot be one. */
export function toChatMessage(raw: Record<string, unknown>): ChatMessage | string {
  const role = raw.role;
  let candidate: unknown;
  if (role === "user") {
    // Text and image parts are kept; other parts (nanobot's own) are left out.
    const content = Array.isArray(raw.content)
      ? raw.content.filter((p: unknown) => {
          const part = p as { type?: unknown } | null;
          return part !== null && typeof part === "object" && (part.type === "text" || part.type === "image_url");
        })
      : text(raw.content);
    candidate = { role, content };
  } else if (role === "assistant") {
    const calls = Array.isArray(raw.tool_calls) && raw.tool_calls.length ? raw.tool_calls.map((c) => toolCallSchema.safeParse(c)) : [];
    if (calls.some((c) => !c.success)) return "an assistant tool call that is not {id, function: {name, arguments}}";
    candidate = {
      role,
      content: raw.content === null || raw.content === undefined ? (calls.length ? null : "") : text(raw.content),
      ...(calls.length ? { tool_calls: calls.map((c) => c.data) } : {}),
      ...(typeof raw.reasoning_content === "string" && raw.reasoning_content ? { reasoning_content: raw.reasoning_content } : {}),
    };
  } else if (role === "tool") {
    if (typeof raw.tool_call_id !== "string") return "a tool result without a tool_call_id";
    candidate = { role, tool_call_id: raw.tool_call_id, ...(typeof raw.name === "string" ? { name: raw.name } : {}), content: text(raw.content) };
  } else if (role === "system") {
    candidate = { role, content: text(raw.content) };
  } else {
    return `role ${JSON.stringify(role)} is none of user, assistant, tool, system`;
  }
  const parsed = chatMessageSchema.safeParse(candidate);
  return parsed.success ? parsed.data : `not a chat message (${parsed.error.issues[0]?.message ?? "invalid"})`;
}

/** The key nanobot's file name stands for (`telegram_42.jsonl` is `telegram:42`): the first `_` was the `:`. */
const keyFromFileName = (fileName: string) => fileName.replace(/\.jsonl$/, "").replace("_", ":");

/** A session file's text read as nanobot reads it; a line that does not read is skipped and named, never fatal. */
export function parseNanobotSession(content: string, fileName: string): NanobotSession | string {
  let key: unknown;
  let createdAt: number | undefined;
  let updatedAt: number | undefined;
  let offset: unknown = 0;
  const read: Array<{ message: ChatMessage | string; at: number | undefined; line: number }> = [];
  const skipped: string[] = [];
  content.split("\n").forEach((line, i) => {
    if (!line.trim()) return;
    let data: unknown;
    try {
      data = JSON.parse(line);
    } catch {
      skipped.push(`line ${i + 1}: not valid JSON`);
      return;
    }
    if (data === null || typeof data !== "object" || Array.isArray(data)) {
      skipped.push(`line ${i + 1}: not a JSON object`);
      return;
    }
    const record = data as Record<string, unknown>;
    if (record._type === "metadata") {
      key = record.key;
      createdAt = parseIsoTime(record.created_at);
      updatedAt = parseIsoTime(record.updated_at);
      offset = record.last_consolidated ?? 0;
      return;
    }
    read.push({ message: toChatMessage(record), at: parseIsoTime(record.timestamp), line: i + 1 });
  });
  const name = typeof key === "string" && key ? key : keyFromFileName(fileName);
  try {
    parseSessionKey(name);
  } catch (err) {
    return (err as Error).message;
  }
  // nanobot resets an offset that is no whole number in [0, messages] (#4066): nothing archived.
  const archived = typeof offset === "number" && Number.isInteger(offset) && offset >= 0 && offset <= read.length ? offset : 0;
  const messages: NanobotSession["messages"] = [];
  let lastConsolidated = 0;
  read.forEach((r, i) => {
    if (typeof r.message === "string") {
      skipped.push(`line ${r.line}: ${r.message}`);
      return;
    }
    messages.push({ message: r.message, at: r.at });
    if (i < archived) lastConsolidated++;
  });
  return { key: name, createdAt, updatedAt, lastConsolidated, messages, skipped };
}
