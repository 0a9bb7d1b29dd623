import { describe, expect, it } from "vitest";
import { markdownToTelegramHtml, splitMessage } from "../../src/channels/telegram-format.js";

describe("markdown → Telegram HTML", () => {
  it.each([
    ["**bold** and *italic* and ~~gone~~", "<b>bold</b> and <i>italic</i> and <s>gone</s>"],
    ["__also bold__ and _also italic_", "<b>also bold</b> and <i>also italic</i>"],
    ["# Title\n## Sub", "<b>Title</b>\n<b>Sub</b>"],
    ["- one\n* two\n  - nested", "• one\n• two\n  • nested"],
    ["a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"],
    ["see [the docs](https://x.dev/a?b=1&c=2)", 'see <a href="https://x.dev/a?b=1&amp;c=2">the docs</a>'],
    ["use `a<b> **x**` here", "use <code>a&lt;b&gt; **x**</code> here"],
    ["```ts\nconst x = 1 < 2 && **y**;\n```", "<pre><code>const x = 1 &lt; 2 &amp;&amp; **y**;</code></pre>"],
    ["> quoted", "┃ quoted"],
    ["snake_case_name and 2*3*4", "snake_case_name and 2*3*4"],
    // nanobot: test_markdown_to_html_numbered_lists_preserved and test_markdown_to_html_numbered_list_normalizes_whitespace.
    ["1. First\n2. Second\n3. Third", "1. First\n2. Second\n3. Third"],
    ["1.   Lots of space\n2.  Two spaces", "1. Lots of space\n2. Two spaces"],
    ["1.\tTab\n  10.   nested\n1.\nnext line", "1. Tab\n  10. nested\n1.\nnext line"],
  ])("%j", (md, html) => {
    expect(markdownToTelegramHtml(md)).toBe(html);
  });
});

describe("splitting long messages", () => {
  it("keeps short messages whole and splits at line breaks, then spaces", () => {
    expect(splitMessage("hello")).toEqual(["hello"]);
    const lines = Array.from({ length: 30 }, (_, i) => `line ${i} ${"x".repeat(20)}`).join("\n");
    const parts = splitMessage(lines, 200);
    expect(parts.every((p) => p.length <= 200)).toBe(true);
    expect(parts.join("\n")).toBe(lines);
    expect(splitMessage("word ".repeat(100).trim(), 50).every((p) => p.length <= 50 && !p.startsWith(" "))).toBe(true);
  });

  it("never breaks a code block: it is closed and reopened across parts", () => {
    const code = "```python\n" + Array.from({ length: 40 }, (_, i) => `print(${i})`).join("\n") + "\n```";
    const parts = splitMessage(`intro\n\n${code}`, 150);
    expect(parts.length).toBeGreaterThan(2);
    for (const p of parts) expect((p.match(/```/g) ?? []).length % 2).toBe(0);
    expect(parts[1]?.startsWith("```python\n")).toBe(true);
  });
});
