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
 * out of order are well formed too; the full pass keeps them as they are.) One pass, no copies: a
 * long session's history is checked on every model call.
 */
function wellFormed(messages: ChatMessage[]): boolean {
  let calls: Array<{ id: string }> = [];
  let answered = 0;
  for (const m of messages) {
    if (m.role === "tool") {
      if (answered >= calls.length || calls[answered]!.id !== m.tool_call_id) return false;
      answered++;
      continue;
    }
    if (answered < calls.length) return false;
    calls = m.role === "assistant" && m.tool_calls?.length ? m.tool_calls : [];
    answered = 0;
  }
  return answered === calls.length;
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
