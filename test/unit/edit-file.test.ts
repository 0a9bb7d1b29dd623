import { readFile, stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { editFileTool } from "../../src/tools/builtin/edit-file.js";
import { readFileTool } from "../../src/tools/builtin/read-file.js";
import { writeFileTool } from "../../src/tools/builtin/write-file.js";
import { createFileReads } from "../../src/tools/file-reads.js";
import { runner, sandboxOf } from "../helpers/tools.js";
import { useTempDirs } from "../helpers/tmp.js";

// The cases of nanobot's tests/tools/test_edit_advanced.py, test_edit_enhancements.py and
// test_file_edit_coding_enhancements.py: inputs and expected outcomes, in troupe's words.
describe("edit_file", () => {
  const tmp = useTempDirs();

  async function setup() {
    const ws = await tmp();
    const sb = sandboxOf(ws);
    const reads = createFileReads();
    const run = runner([readFileTool(sb, reads), writeFileTool(sb, reads), editFileTool(sb, reads)], ws);
    const file = async (name: string, content: string) => {
      await writeFile(join(ws, name), content, "utf8");
      // Read in this turn, as a careful model does; the warning has its own tests below.
      await run("read_file", { path: name });
    };
    const text = (name: string) => readFile(join(ws, name), "utf8");
    const edit = (args: Record<string, unknown>) => run("edit_file", args);
    return { ws, run, file, text, edit };
  }

  describe("deleting lines", () => {
    it("takes the deleted line's newline with it", async () => {
      const { file, text, edit } = await setup();
      await file("a.py", "line1\nline2\nline3\n");
      expect(await edit({ path: "a.py", old_text: "line2", new_text: "" })).toMatch(/^Edited a.py/);
      expect(await text("a.py")).toBe("line1\nline3\n");
      await file("b.py", "line1\nline2\nline3\n");
      await edit({ path: "b.py", old_text: "line2\n", new_text: "" });
      expect(await text("b.py")).toBe("line1\nline3\n");
    });

    it("takes nothing more when deleting inside a line", async () => {
      const { file, text, edit } = await setup();
      await file("a.py", "hello world here\n");
      await edit({ path: "a.py", old_text: "world ", new_text: "" });
      expect(await text("a.py")).toBe("hello here\n");
      await file("b.py", "a = 1; b = 2\nc = 3\n");
      await edit({ path: "b.py", old_text: "; b = 2", new_text: "" });
      expect(await text("b.py")).toBe("a = 1\nc = 3\n");
    });
  });

  describe("quotes", () => {
    it("matches straight quotes against curly ones and keeps the file's curly quotes", async () => {
      const { file, text, edit } = await setup();
      await file("quotes.txt", "message = \u201chello\u201d\n");
      const r = await edit({ path: "quotes.txt", old_text: 'message = "hello"', new_text: 'message = "goodbye"' });
      expect(r).toMatch(/^Edited quotes.txt: replaced 1 occurrence\(s\) at line 1 \(matched ignoring curly vs straight quotes/);
      expect(await text("quotes.txt")).toBe("message = \u201cgoodbye\u201d\n");
    });

    it("keeps a curly apostrophe", async () => {
      const { file, text, edit } = await setup();
      await file("apostrophe.txt", "it\u2019s fine\n");
      await edit({ path: "apostrophe.txt", old_text: "it's fine", new_text: "it's better" });
      expect(await text("apostrophe.txt")).toBe("it\u2019s better\n");
    });

    it("matches with both the indentation and the quotes different", async () => {
      const { file, text, edit } = await setup();
      await file("quote_indent.py", "    message = \u201chello\u201d\n");
      await edit({ path: "quote_indent.py", old_text: 'message = "hello"', new_text: 'message = "goodbye"' });
      expect(await text("quote_indent.py")).toBe("    message = \u201cgoodbye\u201d\n");
    });

    it("leaves straight quotes straight where the file has them", async () => {
      const { file, text, edit } = await setup();
      await file("s.py", "x = 'a'\n");
      await edit({ path: "s.py", old_text: "x = 'a'", new_text: "x = 'b'" });
      expect(await text("s.py")).toBe("x = 'b'\n");
    });
  });

  describe("indentation", () => {
    it("matches old_text written with less indentation and indents new_text as the file is", async () => {
      const { file, text, edit } = await setup();
      await file("indent.py", "if True:\n    def foo():\n        pass\n");
      const r = await edit({ path: "indent.py", old_text: "def foo():\n    pass", new_text: "def bar():\n    return 1" });
      expect(r).toMatch(/matched ignoring indentation; the file's indentation was kept/);
      expect(await text("indent.py")).toBe("if True:\n    def bar():\n        return 1\n");
    });

    it("a trimmed match of whole lines ending in a newline leaves no blank line", async () => {
      const { file, text, edit } = await setup();
      await file("n.py", "def f():\n    a = 1\n    b = 2\n");
      // Trailing spaces in old_text: no exact match, the trimmed one is used.
      expect(await edit({ path: "n.py", old_text: "a = 1  \n", new_text: "a = 10\n" })).toMatch(/matched ignoring indentation/);
      expect(await text("n.py")).toBe("def f():\n    a = 10\n    b = 2\n");
    });

    it("replace_all keeps each match's own indentation", async () => {
      const { file, text, edit } = await setup();
      await file("indent_multi.py", "if a:\n    def foo():\n        pass\nif b:\n        def foo():\n            pass\n");
      await edit({ path: "indent_multi.py", old_text: "def foo():\n    pass", new_text: "def bar():\n    return 1", replace_all: true });
      expect(await text("indent_multi.py")).toBe("if a:\n    def bar():\n        return 1\nif b:\n        def bar():\n            return 1\n");
    });

    it("trimmed matches do not overlap: replace_all over repeated lines loses none", async () => {
      const { file, text, edit } = await setup();
      await file("rep.txt", "  x\n  x\n  x\nend\n");
      const r = await edit({ path: "rep.txt", old_text: "x\nx", new_text: "Y", replace_all: true });
      expect(r).toMatch(/replaced 1 occurrence/);
      expect(await text("rep.txt")).toBe("  Y\n  x\nend\n");
    });
  });

  describe("trailing whitespace in new_text", () => {
    it("is trimmed from each line", async () => {
      const { file, text, edit } = await setup();
      await file("a.py", "x = 1\n");
      await edit({ path: "a.py", old_text: "x = 1", new_text: "x = 2   \ny = 3  " });
      expect(await text("a.py")).toBe("x = 2\ny = 3\n");
    });

    it("is kept in Markdown, where two spaces are a line break", async () => {
      const { file, text, edit } = await setup();
      await file("doc.md", "# Title\n");
      await edit({ path: "doc.md", old_text: "# Title", new_text: "# Title  \nSubtitle  " });
      expect(await text("doc.md")).toBe("# Title  \nSubtitle  \n");
    });
  });

  describe("when old_text is not found", () => {
    it("says whitespace differs", async () => {
      const { file, edit } = await setup();
      await file("space.py", "value =  1\n");
      expect(await edit({ path: "space.py", old_text: "value = 1", new_text: "value = 2" })).toMatch(/^Error: old_text was not found in space.py\.\nPossible cause: whitespace differs\./);
    });

    it("says letter case differs", async () => {
      const { file, edit } = await setup();
      await file("case.py", "HelloWorld\n");
      expect(await edit({ path: "case.py", old_text: "helloworld", new_text: "goodbye" })).toMatch(/Possible cause: letter case differs/);
    });

    it("suggests a file whose name is close to a missing one", async () => {
      const { ws, edit } = await setup();
      await writeFile(join(ws, "config.py"), "x = 1");
      expect(await edit({ path: "conifg.py", old_text: "x = 1", new_text: "x = 2" })).toMatch(/^Error: file not found: conifg.py\. Did you mean config.py\?/);
      expect(await edit({ path: "nonexistent.py", old_text: "a", new_text: "b" })).toMatch(/^Error: file not found: nonexistent.py\. To create a file, pass old_text ""/);
    });
  });

  describe("several matches", () => {
    it("without a choice, answers with their line numbers and changes nothing", async () => {
      const { file, text, edit } = await setup();
      await file("dup.py", "aaa\nbbb\naaa\nbbb\n");
      const r = await edit({ path: "dup.py", old_text: "aaa\nbbb", new_text: "xxx" });
      expect(r).toMatch(/^Error: old_text appears 2 times in dup.py \(at lines 1, 3\)\..*line_hint.*occurrence.*replace_all=true/);
      expect(await text("dup.py")).toBe("aaa\nbbb\naaa\nbbb\n");
    });

    it("occurrence picks one", async () => {
      const { file, text, edit } = await setup();
      await file("d.txt", "one\nsame\ntwo\nsame\n");
      expect(await edit({ path: "d.txt", old_text: "same", new_text: "changed", occurrence: 2 })).toMatch(/at line 4\.$/);
      expect(await text("d.txt")).toBe("one\nsame\ntwo\nchanged\n");
    });

    it("line_hint picks the match on that line", async () => {
      const { file, text, edit } = await setup();
      await file("d.txt", "one\nsame\ntwo\nsame\n");
      await edit({ path: "d.txt", old_text: "same", new_text: "changed", line_hint: 4 });
      expect(await text("d.txt")).toBe("one\nsame\ntwo\nchanged\n");
    });

    it("line_hint refuses a unique match on another line (it never edits the wrong line)", async () => {
      const { file, text, edit } = await setup();
      await file("w.txt", "one\nsame\ntwo\nother\n");
      const r = await edit({ path: "w.txt", old_text: "same", new_text: "changed", line_hint: 4 });
      expect(r).toMatch(/^Error: line_hint 4 does not match the old_text location: old_text appears at line 2 of w.txt/);
      expect(await text("w.txt")).toBe("one\nsame\ntwo\nother\n");
    });

    it("line_hint may point inside a multi-line match", async () => {
      const { file, text, edit } = await setup();
      await file("block.txt", "before\nstart\nmiddle\nend\nafter\n");
      await edit({ path: "block.txt", old_text: "start\nmiddle\nend", new_text: "start\nchanged\nend", line_hint: 3 });
      expect(await text("block.txt")).toBe("before\nstart\nchanged\nend\nafter\n");
    });

    it("line_hint with two matches on its line is ambiguous", async () => {
      const { file, text, edit } = await setup();
      await file("d.txt", "same same\n");
      expect(await edit({ path: "d.txt", old_text: "same", new_text: "changed", line_hint: 1 })).toMatch(/^Error: line_hint 1 is ambiguous: old_text appears 2 times on that line/);
      expect(await text("d.txt")).toBe("same same\n");
    });

    it("expected_replacements refuses a count that differs, and allows one that agrees", async () => {
      const { file, text, edit } = await setup();
      await file("d.txt", "same\nsame\n");
      expect(await edit({ path: "d.txt", old_text: "same", new_text: "changed", replace_all: true, expected_replacements: 1 })).toMatch(
        /^Error: expected 1 replacements but would make 2/,
      );
      expect(await text("d.txt")).toBe("same\nsame\n");
      expect(await edit({ path: "d.txt", old_text: "same", new_text: "changed", replace_all: true, expected_replacements: 2 })).toMatch(/replaced 2 occurrence\(s\) at line 1, 2/);
      expect(await text("d.txt")).toBe("changed\nchanged\n");
    });

    it.each([
      [{ occurrence: 1, replace_all: true }, "occurrence cannot be used with replace_all"],
      [{ line_hint: 1, replace_all: true }, "line_hint cannot be used with replace_all"],
      [{ occurrence: 1, line_hint: 1 }, "line_hint cannot be used with occurrence"],
      [{ occurrence: 3 }, "occurrence 3 is out of range: old_text occurs 2 time(s)"],
      [{ occurrence: 0 }, "occurrence: Too small"],
      [{ line_hint: 0 }, "line_hint: Too small"],
      [{ expected_replacements: 0 }, "expected_replacements: Too small"],
    ])("refuses %j", async (extra, message) => {
      const { file, text, edit } = await setup();
      await file("d.txt", "same\nsame\n");
      expect(await edit({ path: "d.txt", old_text: "same", new_text: "changed", ...extra })).toContain(message);
      expect(await text("d.txt")).toBe("same\nsame\n");
    });
  });

  describe("creating a file with old_text \"\"", () => {
    it("creates it, parent directories included", async () => {
      const { text, edit } = await setup();
      expect(await edit({ path: "subdir/new.py", old_text: "", new_text: "print('hi')" })).toBe("Created subdir/new.py (11 bytes).");
      expect(await text("subdir/new.py")).toBe("print('hi')");
    });

    it("refuses a file that exists and is not empty", async () => {
      const { file, text, edit } = await setup();
      await file("existing.py", "existing content");
      expect(await edit({ path: "existing.py", old_text: "", new_text: "new content" })).toMatch(/^Error: cannot create existing.py: it already exists and is not empty/);
      expect(await text("existing.py")).toBe("existing content");
    });

    it("fills a file that exists and is empty", async () => {
      const { ws, text, edit } = await setup();
      await writeFile(join(ws, "empty.py"), "");
      expect(await edit({ path: "empty.py", old_text: "", new_text: "print('hi')" })).toMatch(/^Filled the empty file empty.py/);
      expect(await text("empty.py")).toBe("print('hi')");
    });
  });

  it("refuses new_text equal to old_text", async () => {
    const { file, edit } = await setup();
    await file("a.txt", "x\n");
    expect(await edit({ path: "a.txt", old_text: "x", new_text: "x" })).toMatch(/^Error: new_text is the same as old_text/);
  });

  it("edits a notebook as JSON text", async () => {
    const { file, text, edit } = await setup();
    await file("analysis.ipynb", '{"cells": []}');
    await edit({ path: "analysis.ipynb", old_text: '"cells": []', new_text: '"cells": [{"cell_type": "markdown", "source": "hi"}]' });
    expect(await text("analysis.ipynb")).toContain('"source": "hi"');
  });

  it("refuses an argument it does not take, by name, and changes nothing", async () => {
    const { file, text, edit } = await setup();
    await file("d.txt", "one\nsame\ntwo\nsame\n");
    const r = await edit({ path: "d.txt", old_text: "same", new_text: "changed", line: 4 });
    expect(r).toMatch(/^Error: edit_file: unknown argument "line" \(accepted: path, old_text, new_text, occurrence, line_hint, replace_all, expected_replacements\)/);
    expect(await text("d.txt")).toBe("one\nsame\ntwo\nsame\n");
  });

  describe("a file not read in this turn", () => {
    it("is edited with a warning saying so", async () => {
      const { ws, text, edit } = await setup();
      await writeFile(join(ws, "a.py"), "hello world");
      const r = await edit({ path: "a.py", old_text: "world", new_text: "earth" });
      expect(r).toBe("Edited a.py: replaced 1 occurrence(s) at line 1.\nWarning: a.py has not been read in this turn; the edit was made on old_text as given. Read a file with read_file before editing it.");
      expect(await text("a.py")).toBe("hello earth");
    });

    it("is edited without one after read_file, and after its own earlier edit or write_file", async () => {
      const { ws, run, edit } = await setup();
      await writeFile(join(ws, "a.py"), "hello world");
      await run("read_file", { path: "a.py" });
      expect(await edit({ path: "a.py", old_text: "world", new_text: "earth" })).toBe("Edited a.py: replaced 1 occurrence(s) at line 1.");
      expect(await edit({ path: "a.py", old_text: "earth", new_text: "mars" })).not.toContain("Warning");
      await run("write_file", { path: "b.py", content: "x = 1\n" });
      expect(await edit({ path: "b.py", old_text: "x = 1", new_text: "x = 2" })).not.toContain("Warning");
    });

    it("warns when the file changed since it was read, not when only its time did", async () => {
      const { ws, run, edit } = await setup();
      await writeFile(join(ws, "a.py"), "hello world");
      await run("read_file", { path: "a.py" });
      const info = await stat(join(ws, "a.py"));
      await utimes(join(ws, "a.py"), info.atime, new Date(info.mtimeMs + 10_000));
      expect(await edit({ path: "a.py", old_text: "world", new_text: "earth" })).not.toContain("Warning");
      await writeFile(join(ws, "a.py"), "hello universe");
      expect(await edit({ path: "a.py", old_text: "universe", new_text: "earth" })).toMatch(/\nWarning: a.py was modified since it was read in this turn/);
    });

    it("a read in another turn does not count", async () => {
      const { ws, run } = await setup();
      await writeFile(join(ws, "a.py"), "hello world");
      await run("read_file", { path: "a.py" }, { turnId: "t0" });
      expect(await run("edit_file", { path: "a.py", old_text: "world", new_text: "earth" }, { turnId: "t1" })).toContain("has not been read in this turn");
    });
  });
});
