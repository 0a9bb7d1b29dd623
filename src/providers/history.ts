import { keptLists } from "./aligned.js";
import type { ChatMessage } from "./messages.js";

/** What a tool call whose result never made it into the history is answered with. */
export const LOST_TOOL_RESULT = "[Tool result unavailable — call was interrupted or lost]";

/**
 * A history an OpenAI-compatible API accepts, whatever was stored: every tool result follows the
 * assistant message that asked for it (orphans are dropped), and every tool call gets a result
 * (missing ones are back-filled), so one damaged turn cannot break a session for good.
 */
export function repairHistory(messages: ChatMessage[]): ChatMessage[] {
  return wellFormed(messages) ? messages.slice() : repairInFull(messages);
}

/** The repair as one full pass over the history, copying it (repairHistory when its quick check finds something to repair). */
export function repairInFull(messages: ChatMessage[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  let open: Array<{ id: string; name: string }> = [];
  const closeOpen = () => {
    for (const call of open) out.push({ role: "tool", tool_call_id: call.id, name: call.name, content: LOST_TOOL_RESULT });
    open = [];
  };
  for (const m of messages) {
    if (m.role === "tool") {
      const i = open.findIndex((c) => c.id === m.tool_call_id);
      if (i < 0) continue; // an orphan: no open call asked for it
      open.splice(i, 1);
      out.push(m);
      continue;
    }
    closeOpen();
    out.push(m);
    if (m.role === "assistant" && m.tool_calls?.length) open = m.tool_calls.map((c) => ({ id: c.id, name: c.function.name }));
  }
  closeOpen();
  return out;
}

/**
 * Whether repairHistory would give the messages back as they are: each assistant message's tool
 * calls answered, in order, by the tool results right after it, and no other tool result. (Answers
 * out of order are well formed too; the full pass keeps them as they are.) A long session's history
 * is checked on every model call: a list is laid beside the well-formed ones checked last
 * (aligned.ts), and a message with its tool results that stands there whole, ended where it ended
 * there, is not read again (reading each message's fields was ~5% of a long session's turn).
 */
const checked = keptLists<Uint8Array>(4);

function wellFormed(messages: ChatMessage[]): boolean {
  const n = messages.length;
  const beside = checked.beside(messages);
  const keptTools = beside.kept?.data;
  const keptLength = beside.kept?.items.length ?? 0;
  // Which are tool results, and where each stands in the kept list (-1: not there).
  const isTool = new Uint8Array(n);
  const at = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const j = (at[i] = beside.at(i));
    isTool[i] = j >= 0 ? keptTools![j]! : messages[i]!.role === "tool" ? 1 : 0;
  }
  // A tool result before any message that could have asked for it.
  if (n && isTool[0]) return false;
  for (let s = 0; s < n; ) {
    let e = s + 1;
    while (e < n && isTool[e]) e++;
    if (!standsWhole(at, s, e, keptTools, keptLength) && !answered(messages, s, e)) return false;
    s = e;
  }
  checked.keep(messages, isTool);
  return true;
}

/** Whether messages [s, e) (one message and its tool results) stand together in the kept (well-formed) list and end there where they end here. */
function standsWhole(at: Int32Array, s: number, e: number, keptTools: Uint8Array | undefined, keptLength: number): boolean {
  const j = at[s]!;
  if (j < 0 || !keptTools) return false;
  for (let k = s + 1; k < e; k++) if (at[k] !== j + (k - s)) return false;
  const end = j + (e - s);
  return e < at.length ? at[e] === end : end === keptLength || keptTools[end] === 0;
}

/** Whether the tool results [s + 1, e) answer the calls of message s, all of them, in order. */
function answered(messages: ChatMessage[], s: number, e: number): boolean {
  const m = messages[s]!;
  const calls = m.role === "assistant" && m.tool_calls?.length ? m.tool_calls : [];
  if (e - s - 1 !== calls.length) return false;
  for (let k = s + 1; k < e; k++) {
    const r = messages[k]!;
    if (r.role !== "tool" || r.tool_call_id !== calls[k - s - 1]!.id) return false;
  }
  return true;
}

type UserContent = Extract<ChatMessage, { role: "user" }>["content"];
type ContentPart = Exclude<UserContent, string>[number];

const parts = (content: UserContent): ContentPart[] => (typeof content === "string" ? (content ? [{ type: "text", text: content }] : []) : content);

/** Two user contents as one, as nanobot merges them: texts joined by a blank line, otherwise parts in order. */
export function mergeUserContent(left: UserContent, right: UserContent): UserContent {
  if (typeof left === "string" && typeof right === "string") return left && right ? `${left}\n\n${right}` : left || right;
  return [...parts(left), ...parts(right)];
}

/**
 * No two user messages in a row (some providers refuse them): a user message that follows
 * another is merged into it. A turn after one that left no reply (its failure notice is shown,
 * not stored) would otherwise send the new message after the unanswered one.
 */
export function mergeConsecutiveUsers(messages: ChatMessage[]): ChatMessage[] {
  if (!messages.some((m, i) => m.role === "user" && messages[i - 1]?.role === "user")) return messages.slice();
  const out: ChatMessage[] = [];
  for (const m of messages) {
    const last = out[out.length - 1];
    if (m.role === "user" && last?.role === "user") out[out.length - 1] = { role: "user", content: mergeUserContent(last.content, m.content) };
    else out.push(m);
  }
  return out;
}
