import type { ChatMessage } from "../providers/messages.js";
import { messageTokens } from "./tokens.js";

/** What replaces a tool result that had to go so the request fits the window. */
export const droppedResult = (chars: number) =>
  `[tool result removed to fit the context window (${chars} chars); call the tool again if you still need it]`;

/**
 * The newest messages that fit in `budget` tokens, starting at a user message so no tool result
 * or tool call is left without its partner.
 */
export function tokenWindow(messages: ChatMessage[], budget: number): ChatMessage[] {
  let start = messages.length;
  let used = 0;
  while (start > 0) {
    const cost = messageTokens(messages[start - 1]!);
    if (used + cost > budget) break;
    used += cost;
    start--;
  }
  while (start < messages.length && messages[start]?.role !== "user") start++;
  return messages.slice(start);
}

/**
 * A model request cut to `budget` tokens (`fixed` is what the tool schemas take). The system
 * messages stay; the oldest turns go first, whole, at a user message (never leaving a tool result
 * without its call), down to the newest user message; if that is still too much (one tool-heavy
 * turn), the oldest tool results of what is left are replaced by a note, newest kept longest.
 * A history that cannot be cut further is returned as it is.
 */
export function fitToBudget(messages: ChatMessage[], budget: number, fixed = 0): ChatMessage[] {
  const costs = messages.map(messageTokens);
  let total = fixed + costs.reduce((a, b) => a + b, 0);
  if (total <= budget) return messages;
  let head = 0;
  while (head < messages.length && messages[head]!.role === "system") head++;
  const lastUser = messages.findLastIndex((m) => m.role === "user");
  let start = head;
  // Whole turns first: advance to the next user message while over budget.
  while (total > budget && start < lastUser) {
    let next = start + 1;
    while (next < lastUser && messages[next]!.role !== "user") next++;
    for (let i = start; i < next; i++) total -= costs[i]!;
    start = next;
  }
  const out = [...messages.slice(0, head), ...messages.slice(start)];
  if (total <= budget) return out;
  // Then the oldest tool results of the turn itself (the last few stay whole as long as they can).
  for (let i = head; i < out.length && total > budget; i++) {
    const m = out[i]!;
    if (m.role !== "tool") continue;
    const note = droppedResult(m.content.length);
    if (note.length >= m.content.length) continue;
    const replaced = { ...m, content: note };
    total += messageTokens(replaced) - messageTokens(m);
    out[i] = replaced;
  }
  return out;
}
