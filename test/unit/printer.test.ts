import { describe, expect, it } from "vitest";
import { renderMarkdown } from "../../src/cli/markdown.js";
import { createPrinter, displayWidth } from "../../src/cli/printer.js";

const sink = (columns?: number) => {
  let text = "";
  return { write: (s: string) => ((text += s), true), columns, text: () => text };
};

describe("terminal Markdown", () => {
  it("renders headings, emphasis, code, links, lists, quotes and code blocks; leaves snake_case alone", () => {
    const out = renderMarkdown("# Title\n## Sub\nSome **bold**, *it*, `x*y*z` and [docs](https://d.example).\n- item\n> said\n```sh\nls *.md\n```\nrun my_tool_name now");
    expect(out.split("\n")).toEqual([
      "\x1b[1m\x1b[4mTitle\x1b[24m\x1b[22m",
      "\x1b[1mSub\x1b[22m",
      "Some \x1b[1mbold\x1b[22m, \x1b[3mit\x1b[23m, \x1b[36mx*y*z\x1b[39m and \x1b[4mdocs\x1b[24m (https://d.example).",
      "• item",
      "\x1b[2m│\x1b[22m \x1b[3msaid\x1b[23m",
      "\x1b[2m  ┌── sh\x1b[22m",
      "  \x1b[36mls *.md\x1b[39m",
      "\x1b[2m  └──\x1b[22m",
      "run my_tool_name now",
    ]);
  });

  it("counts wide characters as two columns", () => {
    expect(displayWidth("ab")).toBe(2);
    expect(displayWidth("日本")).toBe(4);
  });
});

describe("the reply printer", () => {
  it("puts each model call's streamed text in its own paragraph, and ends the streamed reply with one newline", () => {
    const out = sink();
    const p = createPrinter(out, { stream: true, markdown: false });
    p.delta("Let me ");
    p.delta("look.");
    p.boundary();
    p.message("(a message the tool sent)");
    p.delta("Found it.");
    p.boundary();
    p.finish("Found it.");
    expect(out.text()).toBe("Let me look.\n(a message the tool sent)\n\nFound it.\n");
  });

  it("prints a failure after partial text on a line of its own, where it is told to", () => {
    const out = sink();
    const err = sink();
    const p = createPrinter(out, { stream: true, markdown: false });
    p.delta("Half a sent");
    p.finish("Sorry, I could not finish this: boom", err);
    expect(out.text()).toBe("Half a sent\n");
    expect(err.text()).toBe("Sorry, I could not finish this: boom\n");
  });

  it("without streaming prints the whole reply once", () => {
    const out = sink();
    const p = createPrinter(out, { stream: false, markdown: false });
    p.delta("ignored");
    p.finish("The reply.");
    expect(out.text()).toBe("The reply.\n");
  });

  it("with Markdown shows a line raw while it streams, then takes it back (all its rows) and renders it", () => {
    const out = sink(10);
    const p = createPrinter(out, { stream: true, markdown: true });
    p.delta("**bold** and more");
    p.delta(" text\nnext");
    p.finish("**bold** and more text\nnext");
    expect(out.text()).toBe(`**bold** and more\x1b[1A\r\x1b[J\x1b[1mbold\x1b[22m and more text\nnext\r\x1b[Jnext\n`);
  });
});
