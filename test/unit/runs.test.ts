import { describe, expect, it } from "vitest";
import { messagesTokens, messagesTokensBound, messageTokens, messageTokensBound } from "../../src/memory/tokens.js";
import type { ChatMessage } from "../../src/providers/messages.js";

/**
 * Token sums over a long history are added up by runs of message objects kept between calls
 * (src/providers/runs.ts): whatever the list became since (grown at its end, cut at its start, one
 * message replaced by a copy in the middle), the sum is the sum of its messages.
 */
describe("token sums by runs", () => {
  it("are the messages' own counts summed, call after call as the list changes", () => {
    const made: ChatMessage[] = [];
    const message = (i: number): ChatMessage =>
      i % 3 === 0 ? { role: "user", content: `question ${i} ${"word ".repeat(i % 17)}` } : { role: "assistant", content: `answer ${i} ✓ ${"x".repeat(i % 40)}` };
    let start = 0;
    for (let call = 0; call < 200; call++) {
      made.push(message(made.length), message(made.length + 1));
      if (call % 23 === 22) start += 11;
      const list = made.slice(start);
      if (call % 5 === 3) list[Math.floor(list.length / 2)] = { ...list[Math.floor(list.length / 2)]!, content: "replaced" } as ChatMessage;
      expect(messagesTokensBound(list)).toBe(list.reduce((n, m) => n + messageTokensBound(m), 0));
      if (call % 20 === 0) expect(messagesTokens(list)).toBe(list.reduce((n, m) => n + messageTokens(m), 0));
    }
  });
});
