import { mkdir, readFile, stat, symlink, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { TOOL_ERROR_HINT } from "../../src/tools/contract.js";
import { editFileTool } from "../../src/tools/builtin/edit-file.js";
import { globTool } from "../../src/tools/builtin/glob.js";
import { grepTool } from "../../src/tools/builtin/grep.js";
import { listDirTool, SYNC_READDIR_MAX_BYTES } from "../../src/tools/builtin/list-dir.js";
import { readFileTool } from "../../src/tools/builtin/read-file.js";
import { writeFileTool } from "../../src/tools/builtin/write-file.js";
import { runner, sandboxOf } from "../helpers/tools.js";
import { useTempDirs } from "../helpers/tmp.js";

describe("file tools", () => {
  const tmp = useTempDirs();

  async function setup() {
    const ws = await tmp();
    const sb = sandboxOf(ws);
    const run = runner([readFileTool(sb), writeFileTool(sb), editFileTool(sb), listDirTool(sb), globTool(sb), grepTool(sb)], ws);
    return { ws, run };
  }

  it("read_file numbers lines and pages with offset and limit", async () => {
    const { ws, run } = await setup();
    await writeFile(join(ws, "a.txt"), Array.from({ length: 12 }, (_, i) => `line ${i + 1}`).join("\n") + "\n");
    expect(await run("read_file", { path: "a.txt", offset: 10, limit: 2 })).toBe("10| line 10\n11| line 11\n\n(Showing lines 10-11 of 12. Use offset=12 to continue.)");
    expect(await run("read_file", { path: "a.txt", offset: "12" })).toBe("12| line 12\n\n(End of file — 12 lines total)");
    expect(await run("read_file", { path: "a.txt", offset: 13 })).toMatch(/offset 13 is beyond end of file a.txt \(12 lines\)/);
  });

  it("read_file refuses device files, binaries, directories and missing files with a clear message", async () => {
    const { ws, run } = await setup();
    await writeFile(join(ws, "img.bin"), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0x0d, 0xff, 0x00, 0x01, 0x02]));
    const run2 = runner([readFileTool({ ...sandboxOf(ws), restrict: false })], ws);
    expect(await run2("read_file", { path: "/dev/zero" })).toBe(`Error: /dev/zero is not a regular file (a device, FIFO or socket) and cannot be read\n\n${TOOL_ERROR_HINT}`);
    expect(await run("read_file", { path: "img.bin" })).toMatch(/^Error: img.bin is a binary file \(12 bytes\); read_file reads text, images/);
    expect(await run("read_file", { path: "." })).toMatch(/is a directory; use list_dir/);
    expect(await run("read_file", { path: "nope.txt" })).toMatch(/^Error: file not found: nope.txt/);
    expect(await run("read_file", { path: "../../etc/passwd" })).toMatch(/outside the workspace/);
  });

  it("write_file creates parent directories and stays in the workspace", async () => {
    const { ws, run } = await setup();
    expect(await run("write_file", { path: "deep/er/note.md", content: "héllo" })).toBe("Wrote 6 bytes to deep/er/note.md");
    expect(await readFile(join(ws, "deep/er/note.md"), "utf8")).toBe("héllo");
    expect(await run("write_file", { path: "/tmp/troupe-escape.txt", content: "x" })).toMatch(/outside the workspace/);
  });

  it("edit_file replaces a unique match, keeps CRLF, and handles several matches", async () => {
    const { ws, run } = await setup();
    await writeFile(join(ws, "c.ts"), "const a = 1;\r\nconst b = 2;\r\nconst a2 = 1;\r\n");
    expect(await run("edit_file", { path: "c.ts", old_text: "const b = 2;", new_text: "const b = 3;" })).toBe("Edited c.ts: replaced 1 occurrence(s) at line 2.");
    expect(await readFile(join(ws, "c.ts"), "utf8")).toBe("const a = 1;\r\nconst b = 3;\r\nconst a2 = 1;\r\n");
    expect(await run("edit_file", { path: "c.ts", old_text: "= 1;", new_text: "= 9;" })).toMatch(
      /old_text appears 2 times in c.ts \(at lines 1, 3\)\. Include more surrounding lines to make it unique, or pass line_hint \(the line to edit\), occurrence/,
    );
    expect(await run("edit_file", { path: "c.ts", old_text: "= 1;", new_text: "= 9;", occurrence: 2 })).toMatch(/at line 3/);
    expect(await readFile(join(ws, "c.ts"), "utf8")).toBe("const a = 1;\r\nconst b = 3;\r\nconst a2 = 9;\r\n");
    expect(await run("edit_file", { path: "c.ts", old_text: "const", new_text: "let", replace_all: true })).toMatch(/replaced 3 occurrence/);
  });

  it("edit_file on a file that mixes CRLF and LF changes only the edited text, not every other line's ending", async () => {
    const { ws, run } = await setup();
    await writeFile(join(ws, "m.txt"), "one\r\ntwo\nthree\r\nfour\n");
    expect(await run("edit_file", { path: "m.txt", old_text: "two", new_text: "TWO" })).toMatch(/^Edited m\.txt/);
    expect(await readFile(join(ws, "m.txt"), "utf8")).toBe("one\r\nTWO\nthree\r\nfour\n");
  });

  it("edit_file shows the closest region when old_text is not found", async () => {
    const { ws, run } = await setup();
    await writeFile(join(ws, "f.py"), "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n");
    const r = await run("edit_file", { path: "f.py", old_text: "def sub(a,b):\n    return a-b", new_text: "x" });
    expect(r).toMatch(/^Error: old_text was not found in f.py\.\nThe closest region \(lines 4-5, \d+% similar\) is:\n4\| def sub\(a, b\):\n5\| {5}return a - b\n/);
    expect(r.endsWith(TOOL_ERROR_HINT)).toBe(true);
  });

  it("list_dir reads a big directory (past SYNC_READDIR_MAX_BYTES) off the event loop, with the same listing", async () => {
    const ws = await tmp();
    const big = join(ws, "big");
    await mkdir(big);
    // Long names: the directory's size passes the threshold on ext4, tmpfs and the like.
    const names = Array.from({ length: 4_000 }, (_, i) => `file-with-a-rather-long-name-to-grow-the-directory-${String(i).padStart(5, "0")}.txt`);
    for (const name of names) await writeFile(join(big, name), "");
    expect((await stat(big)).size).toBeGreaterThan(SYNC_READDIR_MAX_BYTES);
    const sb = sandboxOf(ws);
    const run = runner([listDirTool(sb)], ws);
    expect(await run("list_dir", { path: "big", max_entries: 5 })).toBe(`${names.slice(0, 5).join("\n")}\n… and 3995 more (raise max_entries, or use glob)`);
    expect(await run("list_dir", { path: "big/nope" })).toMatch(/directory not found: big\/nope/);
  }, 60_000);

  it("list_dir lists directories first and skips noise; recursive walks the tree", async () => {
    const { ws, run } = await setup();
    await mkdir(join(ws, "src/lib"), { recursive: true });
    await mkdir(join(ws, "node_modules/x"), { recursive: true });
    await writeFile(join(ws, "README.md"), "r");
    await writeFile(join(ws, "src/lib/a.ts"), "a");
    expect(await run("list_dir", {})).toBe("src/\nREADME.md");
    expect(await run("list_dir", { path: "src", recursive: true })).toBe("lib/\nlib/a.ts");
    expect(await run("list_dir", { path: "README.md" })).toMatch(/README.md is not a directory/);
    expect(await run("list_dir", { path: "README.md", recursive: true })).toMatch(/README.md is not a directory/);
    expect(await run("list_dir", { path: "nope" })).toMatch(/directory not found: nope/);
    expect(await run("list_dir", { path: "nope", recursive: true })).toMatch(/directory not found: nope/);
    expect(await run("list_dir", { path: "README.md/x" })).toMatch(/directory not found: README.md\/x|README.md\/x is not a directory/);
  });

  it("glob returns matches newest first and skips .git and node_modules", async () => {
    const { ws, run } = await setup();
    await mkdir(join(ws, "node_modules/pkg"), { recursive: true });
    await mkdir(join(ws, ".git"), { recursive: true });
    for (const [name, age] of [["old.ts", 300], ["mid.ts", 200], ["new.ts", 100], ["node_modules/pkg/i.ts", 0], [".git/h.ts", 0]] as const) {
      await writeFile(join(ws, name), "x");
      const t = new Date(Date.now() - age * 1000);
      await utimes(join(ws, name), t, t);
    }
    expect(await run("glob", { pattern: "**/*.ts" })).toBe("new.ts\nmid.ts\nold.ts");
    expect(await run("glob", { pattern: "*.md" })).toMatch(/^No files match \*\.md/);
  });

  it("grep finds files, lines with context, and counts, skipping binaries", async () => {
    const { ws, run } = await setup();
    await writeFile(join(ws, "a.txt"), "alpha\nbeta\nTODO one\ngamma\ndelta\nepsilon\nTODO two\n");
    await writeFile(join(ws, "b.md"), "nothing here\n");
    await writeFile(join(ws, "blob.bin"), Buffer.concat([Buffer.from("TODO "), Buffer.alloc(64, 0)]));
    const binary = "(skipped 1 binary/unreadable files)";
    expect(await run("grep", { pattern: "TODO" })).toBe(`a.txt\n\n${binary}`);
    expect(await run("grep", { pattern: "todo", case_insensitive: true, output_mode: "count" })).toBe(`a.txt: 2\n\n${binary}\n(total matches: 2 in 1 files)`);
    expect(await run("grep", { pattern: "TODO", output_mode: "content", context: 1 })).toBe(
      `a.txt:3\n  2| beta\n> 3| TODO one\n  4| gamma\n\na.txt:7\n  6| epsilon\n> 7| TODO two\n\n${binary}`,
    );
    expect(await run("grep", { pattern: "(" })).toMatch(/^Error: invalid regular expression \(/);
    expect(await run("grep", { pattern: "zzz", path: "b.md" })).toMatch(/^No matches found for pattern 'zzz' in b.md/);
  });

  it("search tools do not follow a symlink out of the workspace", async () => {
    const { ws, run } = await setup();
    const outside = await tmp();
    await writeFile(join(outside, "secret.txt"), "TOKEN=abc");
    await symlink(outside, join(ws, "link"));
    expect(await run("grep", { pattern: "TOKEN" })).toMatch(/^No matches/);
    expect(await run("glob", { pattern: "**/*.txt" })).toMatch(/^No files match/);
    expect(await run("grep", { pattern: "TOKEN", path: "link" })).toMatch(/outside the workspace/);
  });
});
