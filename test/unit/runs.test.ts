import { describe, expect, it } from "vitest";
import { messagesTokens, messagesTokensBound, messageTokens, messageTokensBound } from "../../src/memory/tokens.js";
import type { ChatMessage } from "../../src/providers/messages.js";

/**
 * Token sums over a long history are added up by runs of message objects kept between calls
 * (src/providers/runs.ts): whatever the list became since (grown at its end, cut at its start, one
 * message replaced by a copy in the middle), the sum is the sum of its messages.
 */
describe("token sums over a changing history", () => {
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

  it("are the messages' own counts summed when the list has a new head, moves, gains or loses a message in the middle, or is changed after", () => {
    const made: ChatMessage[] = [];
    const message = (i: number): ChatMessage => (i % 2 === 0 ? { role: "user", content: `ask ${i} ${"word ".repeat(i % 13)}` } : { role: "assistant", content: `say ${i} ${"é".repeat(i % 29)}` });
    const sums = (list: ChatMessage[]) => [messagesTokensBound(list), messagesTokens(list)];
    const expected = (list: ChatMessage[]) => [list.reduce((n, m) => n + messageTokensBound(m), 0), list.reduce((n, m) => n + messageTokens(m), 0)];
    let start = 0;
    for (let call = 0; call < 150; call++) {
      made.push(message(made.length), message(made.length + 1));
      if (call % 7 === 6) start += 3;
      // A new system message heads every list, as a turn's prompt does.
      const list: ChatMessage[] = [{ role: "system", content: `prompt ${call % 4}` }, ...made.slice(start)];
      if (call % 3 === 1 && list.length > 4) list.splice(list.length >> 1, 0, { role: "user", content: "inserted" });
      if (call % 5 === 2 && list.length > 4) list.splice(list.length >> 2, 1);
      expect(sums(list)).toEqual(expected(list));
      // The caller changes its list after: the next sum of it counts what it holds now.
      list[1] = { role: "assistant", content: "changed in place, long enough to cost more ".repeat(3) };
      expect(sums(list)).toEqual(expected(list));
    }
  });
});
