import type { ChatMessage } from "../providers/messages.js";

/** How many read-only tool results stay whole in what the model sees. */
export const MICROCOMPACT_KEEP = 10;
/** Results this short cost less than a placeholder saves. */
const MIN_CHARS = 200;

/**
 * What the model is sent: read-only tool results older than the last `keep` become a one-line
 * placeholder. They can be fetched again at no risk, and old file listings and page dumps are
 * where a long turn's context goes. The checkpointed messages are left whole.
 */
export function microcompact(messages: ChatMessage[], isReadOnly: (toolName: string) => boolean, keep = MICROCOMPACT_KEEP): ChatMessage[] {
  const readOnlyAt: number[] = [];
  messages.forEach((m, i) => {
    if (m.role === "tool" && m.name && isReadOnly(m.name)) readOnlyAt.push(i);
  });
  const old = new Set(readOnlyAt.slice(0, Math.max(0, readOnlyAt.length - keep)));
  if (old.size === 0) return messages;
  return messages.map((m, i) => (old.has(i) && m.role === "tool" && m.content.length > MIN_CHARS ? cleared(m) : m));
}

/**
 * A result's placeholder, made once per message object: a long session's old results are cleared on
 * every call, and the same object each time lets the request encoder and the token counts reuse
 * what they made of it (messages are never changed in place, so the placeholder stays true).
 */
const placeholders = new WeakMap<ChatMessage, ChatMessage>();
function cleared(m: Extract<ChatMessage, { role: "tool" }>): ChatMessage {
  let p = placeholders.get(m);
  if (p === undefined) placeholders.set(m, (p = { ...m, content: `[${m.name} result cleared to save context (${m.content.length} chars); call ${m.name} again if you need it]` }));
  return p;
}

/** The placeholder made for a message, if one was (memory/side-data.ts lets go of what was kept for both). */
export const placeholderOf = (m: ChatMessage): ChatMessage | undefined => placeholders.get(m);
