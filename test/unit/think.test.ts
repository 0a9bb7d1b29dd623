import { describe, expect, it } from "vitest";
import { createThinkFilter, stripThink } from "../../src/providers/think.js";

// The cases of nanobot's tests/utils/test_strip_think.py (strip_think), inputs and expected outcomes.
const nanobotCases: [string, string][] = [
  // <thought> blocks (Gemma 4 and similar)
  ["Hello <thought>reasoning</thought> World", "Hello  World"],
  ["<thought>ongoing...", ""],
  ["<thought>\nline1\nline2\n</thought>End", "End"],
  ["<thought>a < 3 and b > 2</thought>result", "result"],
  ["A<thought>x</thought>B<thought>y</thought>C", "ABC"],
  ["before<thought>  </thought>after", "beforeafter"],
  ["<thought/>some text", "<thought/>some text"],
  ["Hello <thinking>reasoning</thinking> World", "Hello  World"],
  ["<thinking>ongoing...", ""],
  ["<thinking/>some text", "some text"],
  ["Just normal text", "Just normal text"],
  ["", ""],
  // a tag mentioned mid-content is not a block (#3004)
  ["*Think Stripping:* A new utility to strip `<think>` tags from output.", "*Think Stripping:* A new utility to strip `<think>` tags from output."],
  ["The model emits <think> at the start of its response.", "The model emits <think> at the start of its response."],
  ['Example:\n```\ntext = re.sub(r"<think>[\\s\\S]*", "", text)\n```\nDone.', 'Example:\n```\ntext = re.sub(r"<think>[\\s\\S]*", "", text)\n```\nDone.'],
  ["Gemma 4 uses `<thought>` blocks for reasoning.", "Gemma 4 uses `<thought>` blocks for reasoning."],
  ["<think>reasoning without closing", ""],
  ["  <think>reasoning...", ""],
  ["<thought>reasoning without closing", ""],
  // malformed openers without ">"
  ["<think广场照明灯目前绑定在'照明灯'策略下", "广场照明灯目前绑定在'照明灯'策略下"],
  ["<think The fountain opens at 09:00", "The fountain opens at 09:00"],
  ["<thought广场照明灯", "广场照明灯"],
  ["<thinker>content</thinker>", "<thinker>content</thinker>"],
  ["<think/>ok", "<think/>ok"],
  ["<thought/>ok", "<thought/>ok"],
  // orphan closing tags at the edges
  ["answer</think>", "answer"],
  ["</think>answer", "answer"],
  // Harmony channel markers at the start
  ["<channel|>喷泉策略：09:00 开启", "喷泉策略：09:00 开启"],
  ["<|channel|>answer", "answer"],
  // partial tags cut at the end of a stream
  ["喷泉策略说明 <thin", "喷泉策略说明"],
  ["answer <thought", "answer"],
  ["answer <think>", "answer"],
  ["喷泉策略说明 <|chan", "喷泉策略说明"],
  ["answer <channel", "answer"],
  ["answer <|channel|>", "answer"],
  // prose and code that mention the tokens stay as they are
  ["<think-foo>bar</think-foo>", "<think-foo>bar</think-foo>"],
  ["<think_foo>bar</think_foo>", "<think_foo>bar</think_foo>"],
  ["<think1>bar</think1>", "<think1>bar</think1>"],
  ["<think:foo>bar</think:foo>", "<think:foo>bar</think:foo>"],
  ["Use `</think>` to close a thinking block.", "Use `</think>` to close a thinking block."],
  ["The Harmony spec uses `<|channel|>` and `<channel|>` markers.", "The Harmony spec uses `<|channel|>` and `<channel|>` markers."],
  ["Example:\n```\nif line.startswith('<channel|>'):\n    skip()\n```", "Example:\n```\nif line.startswith('<channel|>'):\n    skip()\n```"],
  // extract_think's clean text
  ["Hello <think>reasoning content\nhere</think> World", "Hello  World"],
  ["Start<think>first reasoning</think>middle<thought>second reasoning</thought>End", "StartmiddleEnd"],
  ["Hello <think></think> World", "Hello  World"],
  ["Hello <think>   \n World", "Hello <think>   \n World"],
];

// troupe's own: what nanobot's regexes did not cover.
const troupeCases: [string, string][] = [
  ["<think>plan</think>Hello", "Hello"],
  ["<think>plan</think>\n\nHello", "Hello"],
  ["<think>a</think><think>b", ""],
  ["<think>a</think></think>answer", "answer"],
  ["Answer.\n</thinking>\n", "Answer."],
  ["Here is how: `<think>x</think>` is a block.", "Here is how: `<think>x</think>` is a block."],
  ["```xml\n<thinking>kept</thinking>\n```", "```xml\n<thinking>kept</thinking>\n```"],
  ["<think>the user wants `code`</think>Sure.", "Sure."],
  ["a <thinking/> b", "a <thinking/> b"],
  ["Visible <b>", "Visible <b>"],
  ["x < 3 and y > 2", "x < 3 and y > 2"],
  ["a <", "a <"],
  ["It emits <think> first, and `</think>` ends it.", "It emits <think> first, and `</think>` ends it."],
  ["It emits <think> first, and `</think>` ends it. Then </think> rest", "It emits  rest"],
  ["<think>reasoning with `</think>` inside</think>after", "` inside</think>after"],
];

/** Every way of cutting `text` in two and in three (the third cut a step on), and one delta per character. */
function chunkings(text: string): string[][] {
  const out: string[][] = [[...text]];
  for (let a = 0; a <= text.length; a++) {
    out.push([text.slice(0, a), text.slice(a)]);
    const b = Math.min(text.length, a + 3);
    out.push([text.slice(0, a), text.slice(a, b), text.slice(b)]);
  }
  return out;
}

const streamed = (chunks: string[]) => {
  const f = createThinkFilter();
  return chunks.map((c) => f.push(c)).join("") + f.flush();
};

describe("stripThink", () => {
  it.each(nanobotCases)("nanobot's case %j", (input, expected) => {
    expect(stripThink(input)).toBe(expected);
  });

  it.each(troupeCases)("%j", (input, expected) => {
    expect(stripThink(input)).toBe(expected);
  });
});

describe("the streamed filter", () => {
  it.each([...nanobotCases, ...troupeCases])("gives the same text for %j however the stream is cut", (input, expected) => {
    for (const chunks of chunkings(input)) expect(streamed(chunks), JSON.stringify(chunks)).toBe(expected);
  });

  it("never shows reasoning while it streams, and shows visible text as soon as it is certain", () => {
    const f = createThinkFilter();
    expect(f.push("<thi")).toBe("");
    expect(f.push("nk>secret plan")).toBe("");
    expect(f.push(" more</th")).toBe("");
    expect(f.push("ink>Visible")).toBe("Visible");
    expect(f.push(" text <")).toBe(" text");
    expect(f.push("b>")).toBe(" <b>");
    expect(f.flush()).toBe("");
  });

  it("holds an opener in the middle back until it is known to be prose, then shows it", () => {
    const f = createThinkFilter();
    expect(f.push("The model emits ")).toBe("The model emits");
    expect(f.push("<think> at the start")).toBe("");
    expect(f.flush()).toBe(" <think> at the start");
  });

  it("shows a reply stuck repeating an opener as it is, quickly and without a deep stack", () => {
    const text = "Answer: " + "<think> again ".repeat(20_000);
    const started = performance.now();
    const f = createThinkFilter();
    const out = text.match(/[\s\S]{1,5}/g)!.map((c) => f.push(c)).join("") + f.flush();
    expect(out).toBe(text.trim());
    expect(stripThink(text)).toBe(text.trim());
    // Generous: linear work takes milliseconds; the quadratic kind took seconds.
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it("keeps a long reply linear (no re-scan of the whole text per delta)", () => {
    const f = createThinkFilter();
    const words = Array.from({ length: 20_000 }, (_, i) => `word${i} `);
    const out = words.map((w) => f.push(w)).join("") + f.flush();
    expect(out).toBe(words.join("").trim());
  });
});
