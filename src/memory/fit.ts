import type { ChatMessage } from "../providers/messages.js";
import { exactCost, messagesTokens, messagesTokensBound, messageTokens, type TokenCost } from "./tokens.js";

/** What replaces a tool result that had to go so the request fits the window. */
export const droppedResult = (chars: number) =>
  `[tool result removed to fit the context window (${chars} chars); call the tool again if you still need it]`;

/**
 * The newest messages that fit in `budget` tokens, starting at a user message so no tool result
 * or tool call is left without its partner.
 */
export function tokenWindow(messages: ChatMessage[], budget: number): ChatMessage[] {
  // All of it fits by the byte bound, so by the exact count too: no tokenizer needed.
  if (messagesTokensBound(messages) <= budget) return fromUser(messages, 0);
  let start = messages.length;
  let used = 0;
  while (start > 0) {
    const cost = messageTokens(messages[start - 1]!);
    if (used + cost > budget) break;
    used += cost;
    start--;
  }
  return fromUser(messages, start);
}

function fromUser(messages: ChatMessage[], start: number): ChatMessage[] {
  while (start < messages.length && messages[start]?.role !== "user") start++;
  return messages.slice(start);
}

/**
 * The stored history a new turn is sent: the newest that fits in `budget` beside `fixed` (system
 * prompt, user message, tool schemas), as tokenWindow. `estimate` is what the whole prompt costs,
 * at least its exact count (the byte bound when that fits the budget, else the exact count).
 */
export function historyWindow(stored: ChatMessage[], budget: number, fixed: TokenCost): { history: ChatMessage[]; estimate: number; exact: boolean } {
  const bound = fixed.bound + messagesTokensBound(stored);
  if (bound <= budget) return { history: fromUser(stored, 0), estimate: bound, exact: false };
  const exactFixed = fixed.exact();
  const estimate = exactFixed + messagesTokens(stored);
  // All of it fits by the exact count (the Consolidator keeps a session under the budget): no walk back from the end.
  if (estimate <= budget) return { history: fromUser(stored, 0), estimate, exact: true };
  return { history: tokenWindow(stored, Math.max(0, budget - exactFixed)), estimate, exact: true };
}

/**
 * A model request cut to `budget` tokens (`fixed` is what the tool schemas take). The system
 * messages stay; the oldest turns go first, whole, at a user message (never leaving a tool result
 * without its call), down to the newest user message; if that is still too much (one tool-heavy
 * turn), the oldest tool results of what is left are replaced by a note, newest kept longest.
 * A history that cannot be cut further is returned as it is. `fixedCost` is what the tool schemas
 * take (counted exactly only when the byte bound does not fit).
 */
export function fitToBudget(messages: ChatMessage[], budget: number, fixedCost: TokenCost = exactCost(0)): ChatMessage[] {
  // Under the budget by the byte bound: under it by the exact count too, and nothing is cut.
  if (fixedCost.bound + messagesTokensBound(messages) <= budget) return messages;
  const fixed = fixedCost.exact();
  let total = fixed + messagesTokens(messages);
  if (total <= budget) return messages;
  const costs = messages.map(messageTokens);
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
