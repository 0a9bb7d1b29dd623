import { describe, expect, it } from "vitest";
import { printable, printableDeep } from "../../src/cli/printable.js";
import { runLines } from "../../src/cli/cron.js";
import { createPrinter } from "../../src/cli/printer.js";
import { CRON_FORMAT } from "../../src/cron/jobs.js";

describe("printable: stored or remote text made safe for the owner's terminal", () => {
  it("escapes C0 controls but newline and tab, DEL and C1, so no escape sequence reaches the terminal", () => {
    expect(printable("a\x1b]0;TITLE\x07\x1b[2Jb")).toBe("a\\x1b]0;TITLE\\x07\\x1b[2Jb");
    expect(printable("one\ntwo\tthree\rover\x00\x7f\x85\x9b31m")).toBe("one\ntwo\tthree\\x0dover\\x00\\x7f\\x85\\x9b31m");
    // A line ending a Windows file carries is a line ending, not a carriage return to escape.
    expect(printable("line\r\nnext")).toBe("line\nnext");
    expect(printable("plain, üñíçødé and 日本 ✓")).toBe("plain, üñíçødé and 日本 ✓");
  });

  it("escapes every string in a parsed log entry, keys and nesting kept", () => {
    expect(printableDeep({ msg: "x\x1b[2J", n: 1, err: { message: ["\x07"] } })).toEqual({ msg: "x\\x1b[2J", n: 1, err: { message: ["\\x07"] } });
  });

  it("cron runs show a reply's control characters escaped", () => {
    const lines = runLines([
      { v: CRON_FORMAT, jobId: "j", scheduledAt: 0, startedAt: 0, finishedAt: 1, status: "ok", missed: 0, trigger: "manual", reply: "done\x1b]0;T\x07", note: null } as never,
    ]);
    expect(lines[1]).toContain("done\\x1b]0;T\\x07");
  });

  it("the agent's printer escapes the model's text, streamed or whole, and keeps its own Markdown styling", () => {
    let text = "";
    const out = { write: (s: string) => ((text += s), true) };
    const printer = createPrinter(out, { stream: true, markdown: true });
    printer.delta("**bold** \x1b]0;T");
    printer.delta("\x07 end\n");
    printer.finish("**bold** \x1b]0;T\x07 end");
    expect(text).toBe("\x1b[1mbold\x1b[22m \\x1b]0;T\\x07 end\n");
  });

  it("the printer's status line (a tool hint built from the model's arguments) is escaped too, its own clearing codes kept", () => {
    let text = "";
    const out = { write: (s: string) => ((text += s), true) };
    const printer = createPrinter(out, { stream: true, markdown: false });
    printer.status("$ echo \x1b]0;PWNED\x07");
    expect(text).toBe("\r\x1b[K$ echo \\x1b]0;PWNED\\x07");
  });
});
