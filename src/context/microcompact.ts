import { keptLists } from "../providers/aligned.js";
import type { ChatMessage } from "../providers/messages.js";

/** How many read-only tool results stay whole in what the model sees. */
export const MICROCOMPACT_KEEP = 10;
/** Results this short cost less than a placeholder saves. */
const MIN_CHARS = 200;

/**
 * Which messages of the lists compacted last are tool results (providers/aligned.ts): a long
 * session's window is compacted on every model call, and reading every message's role again was ~2%
 * of its turn. Whether a result's tool is read-only is asked of the registry at each call, once per
 * tool name: MCP tools come and go while a session lives.
 */
const flagged = keptLists<Uint8Array>(4);

/**
 * What the model is sent: read-only tool results older than the last `keep` become a one-line
 * placeholder. They can be fetched again at no risk, and old file listings and page dumps are
 * where a long turn's context goes. The checkpointed messages are left whole.
 */
export function microcompact(messages: ChatMessage[], isReadOnly: (toolName: string) => boolean, keep = MICROCOMPACT_KEEP): ChatMessage[] {
  const n = messages.length;
  const beside = flagged.beside(messages);
  const keptFlags = beside.kept?.data;
  const isResult = new Uint8Array(n);
  const readOnly = new Uint8Array(n);
  const asked = new Map<string, boolean>();
  let count = 0;
  for (let i = 0; i < n; i++) {
    const j = beside.at(i);
    const m = messages[i]!;
    if (!(isResult[i] = j >= 0 ? keptFlags![j]! : m.role === "tool" && m.name ? 1 : 0)) continue;
    const name = (m as Extract<ChatMessage, { role: "tool" }>).name!;
    let ro = asked.get(name);
    if (ro === undefined) asked.set(name, (ro = isReadOnly(name)));
    if (ro) count += readOnly[i] = 1;
  }
  flagged.keep(messages, isResult);
  let old = count - keep;
  if (old <= 0) return messages;
  const out = messages.slice();
  for (let i = 0; i < n && old > 0; i++) {
    if (!readOnly[i]) continue;
    old--;
    const m = messages[i] as Extract<ChatMessage, { role: "tool" }>;
    if (m.content.length > MIN_CHARS) out[i] = cleared(m);
  }
  return out;
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
