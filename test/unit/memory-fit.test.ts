import { countTokens } from "gpt-tokenizer";
import { describe, expect, it } from "vitest";
import { droppedResult, fitToBudget, tokenWindow } from "../../src/memory/fit.js";
import { messagesTokens, messageTokens, textTokens } from "../../src/memory/tokens.js";
import { repairHistory } from "../../src/providers/history.js";
import type { ChatMessage } from "../../src/providers/messages.js";

const words = (n: number, w = "apple") => Array.from({ length: n }, () => w).join(" ");
const turn = (i: number, size: number): ChatMessage[] => [
  { role: "user", content: `q${i} ${words(size)}` },
  { role: "assistant", content: null, tool_calls: [{ id: `c${i}`, type: "function", function: { name: "read_file", arguments: "{}" } }] },
  { role: "tool", tool_call_id: `c${i}`, name: "read_file", content: words(size, "pear") },
  { role: "assistant", content: `a${i}` },
];

describe("token counting", () => {
  it("counts with a real tokenizer, not characters", () => {
    const text = words(500);
    expect(messageTokens({ role: "user", content: text })).toBe(countTokens(text) + 4);
    // 500 words of 5 letters: about 500 tokens, where a chars/3 guess would say ~1000.
    expect(countTokens(text)).toBeLessThan(700);
  });

  it("counts a long unbroken run (base64, a minified file) in pieces: BPE on one huge word is quadratic", () => {
    // Before: one 600,000-character run took the tokenizer many minutes (100,000 took 13 s), so a turn hung in prepare.
    const run = "x".repeat(600_000);
    const n = textTokens(run);
    // The same as counting it in 256-character pieces, which is what the tokenizer sees.
    expect(n).toBe(countTokens("x".repeat(256)) * (600_000 / 256 - (600_000 % 256) / 256) + countTokens("x".repeat(600_000 % 256)));
    // Text around it is counted as usual.
    expect(textTokens(`hello ${run} world`)).toBe(n + countTokens("hello ") + countTokens(" world"));
  }, 60_000);
});

describe("fitting a request to the window", () => {
  const system: ChatMessage = { role: "system", content: "sys" };

  it("leaves a request that fits alone", () => {
    const messages = [system, ...turn(1, 10)];
    expect(fitToBudget(messages, 10_000)).toBe(messages);
  });

  it("drops the oldest whole turns, starting the rest at a user message", () => {
    const messages = [system, ...turn(1, 300), ...turn(2, 300), ...turn(3, 300), { role: "user", content: "now" } as ChatMessage];
    const budget = messagesTokens([system, ...turn(3, 300), { role: "user", content: "now" }]) + 50;
    const fitted = fitToBudget(messages, budget);
    expect(messagesTokens(fitted)).toBeLessThanOrEqual(budget);
    expect(fitted[0]).toBe(system);
    expect(fitted[1]).toMatchObject({ role: "user", content: expect.stringMatching(/^q3/) });
    // Never an orphan: repairing the fitted history changes nothing.
    expect(repairHistory(fitted)).toEqual(fitted);
  });

  it("counts the tool schemas against the budget", () => {
    const messages = [system, ...turn(1, 300), { role: "user", content: "now" } as ChatMessage];
    const total = messagesTokens(messages);
    expect(fitToBudget(messages, total).length).toBe(messages.length);
    expect(fitToBudget(messages, total, 100).length).toBe(2);
  });

  it("shrinks the oldest tool results of one tool-heavy turn, keeping the newest", () => {
    const calls: ChatMessage[] = [];
    for (let i = 0; i < 20; i++) {
      calls.push({ role: "assistant", content: null, tool_calls: [{ id: `c${i}`, type: "function", function: { name: "exec", arguments: "{}" } }] });
      calls.push({ role: "tool", tool_call_id: `c${i}`, name: "exec", content: `r${i} ${words(400, "log")}` });
    }
    const messages = [system, { role: "user", content: "build it" } as ChatMessage, ...calls];
    const budget = 3000;
    const fitted = fitToBudget(messages, budget);
    expect(messagesTokens(fitted)).toBeLessThanOrEqual(budget);
    expect(fitted.length).toBe(messages.length);
    const tools = fitted.filter((m) => m.role === "tool");
    expect(tools[0]!.content).toBe(droppedResult((messages[3] as { content: string }).content.length));
    expect(tools.at(-1)!.content).toMatch(/^r19 /);
    expect(repairHistory(fitted)).toEqual(fitted);
  });

  it("keeps the newest history that fits, from a user message", () => {
    const history = [...turn(1, 200), ...turn(2, 200)];
    const window = tokenWindow(history, messagesTokens(turn(2, 200)) + 10);
    expect(window).toEqual(turn(2, 200));
    expect(tokenWindow(history, 5)).toEqual([]);
  });
});
