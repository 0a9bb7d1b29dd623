import { countTokens } from "gpt-tokenizer";
import { describe, expect, it } from "vitest";
import { droppedResult, fitToBudget, historyWindow, tokenWindow } from "../../src/memory/fit.js";
import { exactCost, fixedCost, messagesTokens, messagesTokensBound, messageTokens, messageTokensBound, textTokens, textTokensBound, type TokenCost } from "../../src/memory/tokens.js";
import { createPrng, type Prng } from "../helpers/prng.js";
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

  it("counts text that spells a special token as text (the tokenizer threw on it, failing the turn)", () => {
    expect(textTokens("what does <|endoftext|> mean?")).toBeGreaterThan(5);
    expect(messageTokens({ role: "user", content: `${"<|endoftext|> ".repeat(40)}` })).toBeGreaterThan(40);
  });
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
    expect(fitToBudget(messages, total, exactCost(100)).length).toBe(2);
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

/** Random text from one alphabet: ASCII words, CJK, emoji (astral, with ZWJ and modifiers), long runs, or all mixed. */
function randomText(r: Prng, kind: string, length: number): string {
  const ascii = () => String.fromCharCode(32 + r.int(95));
  const cjk = () => String.fromCharCode(0x4e00 + r.int(0x5000));
  const emoji = () => r.pick(["😀", "👍🏽", "👨‍👩‍👧", "🇫🇷", "🧪", "❤️"]);
  const other = () => r.pick(["é", "ß", "ж", "ع", "ह", "\n", "\t", " ", "\u0000", "\ufffd", "<|endoftext|>"]);
  const run = () => r.pick(["x", "ab", "=", "A1"]).repeat(1 + r.int(700));
  const gens: Record<string, () => string> = { ascii, cjk, emoji, other, run };
  let out = "";
  while (out.length < length) out += (kind === "mixed" ? gens[r.pick(Object.keys(gens))]! : gens[kind]!)();
  return out;
}

/** The exact path, as it was before the byte bound: the newest messages whose exact counts fit, from a user message. */
function exactWindow(messages: ChatMessage[], budget: number): ChatMessage[] {
  let start = messages.length;
  let used = 0;
  while (start > 0 && used + messageTokens(messages[start - 1]!) <= budget) used += messageTokens(messages[--start]!);
  while (start < messages.length && messages[start]?.role !== "user") start++;
  return messages.slice(start);
}

/** A TokenCost whose bound never fits: fitToBudget and historyWindow take their exact path. */
const exactOnly = (cost: TokenCost): TokenCost => ({ bound: Number.POSITIVE_INFINITY, exact: cost.exact });

function randomHistory(r: Prng, turns: number): ChatMessage[] {
  const kinds = ["ascii", "cjk", "emoji", "mixed", "run"];
  const out: ChatMessage[] = [];
  for (let i = 0; i < turns; i++) {
    out.push({ role: "user", content: randomText(r, r.pick(kinds), 1 + r.int(400)) });
    if (r.chance(0.5)) {
      out.push({ role: "assistant", content: null, tool_calls: [{ id: `c${i}`, type: "function", function: { name: "exec", arguments: JSON.stringify({ cmd: randomText(r, "mixed", r.int(80)) }) } }] });
      out.push({ role: "tool", tool_call_id: `c${i}`, name: "exec", content: randomText(r, r.pick(kinds), r.int(1500)) });
    }
    out.push({ role: "assistant", content: randomText(r, r.pick(kinds), 1 + r.int(300)) });
  }
  return out;
}

describe("the byte bound on token counts", () => {
  it("costs the same tool list from its first reading, and a new list (the tools changed) anew", () => {
    const tool = (name: string, description: string) => ({ type: "function" as const, function: { name, description, parameters: { type: "object" } } });
    const tools = [tool("exec", "run a command")];
    const first = fixedCost([], tools);
    expect(fixedCost([], tools).bound).toBe(first.bound);
    expect(fixedCost([], tools).exact()).toBe(first.exact());
    const more = [...tools, tool("read_file", "read a file of the workspace, a long description ".repeat(20))];
    expect(fixedCost([], more).bound).toBe(Buffer.byteLength(JSON.stringify(more)));
    expect(fixedCost([], more).bound).toBeGreaterThan(first.bound + 900);
  });

  it("is at least the exact count for random texts (ASCII, CJK, emoji, long runs, mixed)", () => {
    const r = createPrng(15);
    for (const kind of ["ascii", "cjk", "emoji", "other", "run", "mixed"]) {
      for (let i = 0; i < 60; i++) {
        const text = randomText(r, kind, r.int(i < 50 ? 600 : 5000));
        expect(textTokensBound(text), `${kind}: ${JSON.stringify(text.slice(0, 60))}`).toBeGreaterThanOrEqual(textTokens(text));
      }
    }
    // One long unbroken run, counted in pieces: still bounded.
    expect(textTokensBound("q".repeat(100_000))).toBeGreaterThanOrEqual(textTokens("q".repeat(100_000)));
  });

  it("is the UTF-8 byte length of long texts measured again and again (kept by text): same length, other bytes, never mixed up", () => {
    const base = "You are troupe. ".repeat(200);
    const texts = [base, `${base.slice(0, -2)}✓`, `✓${base.slice(2)}`, base.toUpperCase(), `${base}你好`, `x${base.slice(1)}`];
    for (let round = 0; round < 4; round++)
      for (const text of round % 2 ? [...texts].reverse() : texts) {
        // A copy of the same text (another string object) as often as the same one.
        const same = round === 3 ? [...text].join("") : text;
        expect(textTokensBound(same)).toBe(Buffer.byteLength(text, "utf8"));
      }
  });

  it("bounds whole messages: text parts, images, tool calls, tool names", () => {
    const r = createPrng(7);
    const messages: ChatMessage[] = [
      ...randomHistory(r, 20),
      { role: "user", content: [{ type: "text", text: randomText(r, "cjk", 200) }, { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }] },
    ];
    for (const m of messages) expect(messageTokensBound(m)).toBeGreaterThanOrEqual(messageTokens(m));
    const cost = fixedCost([randomText(r, "mixed", 3000), "hello"], [{ type: "function", function: { name: "exec", description: randomText(r, "emoji", 300), parameters: { type: "object" } } }]);
    expect(cost.bound).toBeGreaterThanOrEqual(cost.exact());
  });

  it("keeps the same window as the exact count at every budget, fitting or not", () => {
    const r = createPrng(42);
    for (let round = 0; round < 12; round++) {
      const history = randomHistory(r, 2 + r.int(8));
      const exactTotal = messagesTokens(history);
      const fixed = fixedCost([randomText(r, "mixed", 500)]);
      // Budgets below, around and above both the exact total and the byte bound.
      const boundTotal = history.reduce((n, m) => n + messageTokensBound(m), 0);
      for (const budget of [0, 5, r.int(exactTotal), exactTotal - 1, exactTotal, exactTotal + 1, r.int(boundTotal), boundTotal - 1, boundTotal, boundTotal * 2]) {
        expect(tokenWindow(history, budget)).toEqual(exactWindow(history, budget));
        const withSystem: ChatMessage[] = [{ role: "system", content: "sys" }, ...history];
        expect(fitToBudget(withSystem, budget + fixed.exact(), fixed)).toEqual(fitToBudget(withSystem, budget + fixed.exact(), exactOnly(fixed)));
        const both = historyWindow(history, budget + fixed.exact(), fixed);
        const exact = historyWindow(history, budget + fixed.exact(), exactOnly(fixed));
        expect(both.history).toEqual(exact.history);
        expect(both.history).toEqual(exactWindow(history, budget));
        // The estimate never under-counts.
        expect(both.estimate).toBeGreaterThanOrEqual(exact.estimate);
      }
    }
  });

  it("returns the request untouched, without counting exactly, when the bound fits", () => {
    const messages: ChatMessage[] = [{ role: "system", content: "sys" }, ...turn(1, 50)];
    let counted = 0;
    const cost: TokenCost = { bound: 100, exact: () => (counted++, 100) };
    expect(fitToBudget(messages, 100 + messagesTokensBound(messages), cost)).toBe(messages);
    expect(historyWindow(messages.slice(1), 100 + messagesTokensBound(messages), cost).exact).toBe(false);
    expect(counted).toBe(0);
    // One token short by the bound: the exact count decides (and here everything still fits).
    expect(fitToBudget(messages, 99 + messagesTokensBound(messages), cost)).toBe(messages);
    expect(counted).toBe(1);
  });
});
