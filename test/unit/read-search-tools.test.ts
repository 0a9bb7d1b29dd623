import { link, mkdir, symlink, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { strToU8, zipSync } from "fflate";
import { describe, expect, it } from "vitest";
import { globTool } from "../../src/tools/builtin/glob.js";
import { extractOfficeText } from "../../src/tools/documents/office.js";
import { grepTool } from "../../src/tools/builtin/grep.js";
import { readFileTool } from "../../src/tools/builtin/read-file.js";
import { BUILTIN_SKILLS_DIR } from "../../src/context/templates.js";
import { TOOL_ERROR_HINT } from "../../src/tools/contract.js";
import { attachToolImages, chatWithImageFallback, MAX_TOOL_IMAGES, withoutImages } from "../../src/tools/tool-images.js";
import type { ChatMessage } from "../../src/providers/messages.js";
import { makeDocx, makePdf, makePptx, makeXlsx, PNG_1PX } from "../helpers/documents.js";
import { useTempDirs } from "../helpers/tmp.js";
import { runner, sandboxOf } from "../helpers/tools.js";

/** The zip with its central directory claiming each member unpacks to `size` bytes (a zip bomb's header, without the bulk). */
function claimSize(zip: Uint8Array, size: number): Uint8Array {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  for (let i = 0; i + 46 <= zip.length; i++) if (view.getUint32(i, true) === 0x02014b50) view.setUint32(i + 24, size, true);
  return zip;
}

const setTime = (path: string, seconds: number) => utimes(path, seconds, seconds);

describe("read_file (nanobot's read cases)", () => {
  const tmp = useTempDirs();
  async function setup() {
    const ws = await tmp();
    return { ws, run: runner([readFileTool(sandboxOf(ws))], ws, 1_000_000) };
  }

  it("numbers lines, pages with offset/limit, and says where the file ends", async () => {
    const { ws, run } = await setup();
    await writeFile(join(ws, "sample.txt"), Array.from({ length: 20 }, (_, i) => `line ${i + 1}`).join("\n"));
    const all = await run("read_file", { path: "sample.txt" });
    expect(all).toContain("1| line 1\n");
    expect(all).toContain("20| line 20");
    expect(all.endsWith("\n\n(End of file — 20 lines total)")).toBe(true);
    const page = await run("read_file", { path: "sample.txt", offset: 5, limit: 3 });
    expect(page).toBe("5| line 5\n6| line 6\n7| line 7\n\n(Showing lines 5-7 of 20. Use offset=8 to continue.)");
    expect(await run("read_file", { path: "sample.txt", offset: 1, limit: 9999 })).toContain("End of file");
    expect(await run("read_file", { path: "sample.txt", offset: 999 })).toMatch(/^Error: offset 999 is beyond end of file sample.txt \(20 lines\)/);
  });

  it("empty files, CRLF, Latin-1 text and the character budget", async () => {
    const { ws, run } = await setup();
    await writeFile(join(ws, "empty.txt"), "");
    expect(await run("read_file", { path: "empty.txt" })).toBe("(Empty file: empty.txt)");
    await writeFile(join(ws, "crlf.txt"), "alpha\r\nbeta\r\ngamma\r\n");
    expect(await run("read_file", { path: "crlf.txt" })).toBe("1| alpha\n2| beta\n3| gamma\n\n(End of file — 3 lines total)");
    await writeFile(join(ws, "legacy.csv"), Buffer.from("name\ncafé", "latin1"));
    const legacy = await run("read_file", { path: "legacy.csv" });
    expect(legacy).toContain("1| name");
    expect(legacy).toContain("2| café");
    // ~110 characters × 2,000 lines is over the 128K budget: cut at a line, with the way on.
    await writeFile(join(ws, "big.txt"), Array.from({ length: 2000 }, () => "x".repeat(110)).join("\n"));
    const big = await run("read_file", { path: "big.txt" });
    expect(big.length).toBeLessThanOrEqual(128_000 + 500);
    expect(big).toMatch(/\(Showing lines 1-\d+ of 2000\. Use offset=\d+ to continue\.\)$/);
  });

  it("device paths and links to them are refused", async () => {
    const ws = await tmp();
    const run = runner([readFileTool({ ...sandboxOf(ws), restrict: false })], ws);
    await symlink("/dev/zero", join(ws, "zero-link"));
    for (const path of ["/dev/zero", "/dev/urandom", "zero-link"]) {
      expect(await run("read_file", { path }), path).toMatch(/^Error: .* is not a regular file \(a device, FIFO or socket\)/);
    }
  });

  it("an image is an image result the request builder turns back into an image part", async () => {
    const { ws, run } = await setup();
    await writeFile(join(ws, "pixel.png"), PNG_1PX);
    await writeFile(join(ws, "fake.png"), Buffer.concat([Buffer.from("\x89PNG\r\n\x1a\n", "latin1"), Buffer.from("fake-png-data")]));
    const result = await run("read_file", { path: "pixel.png" });
    expect(result).toBe(`(Image file: pixel.png [image/png, ${PNG_1PX.length} bytes])`);
    expect(await run("read_file", { path: "fake.png" })).toMatch(/^\(Image file: fake.png \[image\/png, 21 bytes\]\)$/);
    const part = await readFileTool(sandboxOf(ws)).imageOf!(result);
    expect(part).toEqual({ type: "image_url", image_url: { url: `data:image/png;base64,${PNG_1PX.toString("base64")}` } });
    // A result that only looks like one, or names a file that is no longer an image, gives nothing.
    expect(await readFileTool(sandboxOf(ws)).imageOf!("1| (Image file: pixel.png [image/png, 68 bytes])")).toBeUndefined();
    await writeFile(join(ws, "pixel.png"), "now text");
    expect(await readFileTool(sandboxOf(ws)).imageOf!(result)).toBeUndefined();
  });

  it("an image outside the workspace is refused when the result is read back, as on the first read", async () => {
    const ws = await tmp();
    const outside = await tmp();
    await writeFile(join(outside, "secret.png"), PNG_1PX);
    const tool = readFileTool(sandboxOf(ws));
    expect(await tool.imageOf!(`(Image file: ${join(outside, "secret.png")} [image/png, ${PNG_1PX.length} bytes])`)).toBeUndefined();
    await link(join(outside, "secret.png"), join(ws, "hard.png"));
    expect(await runner([tool], ws)("read_file", { path: "hard.png" })).toMatch(/hard link/);
    expect(await tool.imageOf!(`(Image file: hard.png [image/png, ${PNG_1PX.length} bytes])`)).toBeUndefined();
  });

  it("PDF: text per page, pages like 1-3,7, a trailer for the pages left, and clear errors", async () => {
    const { ws, run } = await setup();
    await writeFile(join(ws, "test.pdf"), makePdf(["Hello PDF World"]));
    expect(await run("read_file", { path: "test.pdf" })).toBe("--- Page 1 ---\nHello PDF World");
    await writeFile(join(ws, "multi.pdf"), makePdf(Array.from({ length: 8 }, (_, i) => `Page ${i + 1} content`)));
    const two = await run("read_file", { path: "multi.pdf", pages: "2-3" });
    expect(two).toBe("--- Page 2 ---\nPage 2 content\n\n--- Page 3 ---\nPage 3 content");
    expect(two).not.toContain("Page 1 content");
    expect(await run("read_file", { path: "multi.pdf", pages: "1-2,7" })).toBe(
      "--- Page 1 ---\nPage 1 content\n\n--- Page 2 ---\nPage 2 content\n\n--- Page 7 ---\nPage 7 content",
    );
    expect(await run("read_file", { path: "multi.pdf", pages: "7-99" })).toBe("--- Page 7 ---\nPage 7 content\n\n--- Page 8 ---\nPage 8 content");
    expect(await run("read_file", { path: "multi.pdf", pages: "bad" })).toMatch(/^Error: Invalid page range 'bad': .*Use a form like '1-5' or '1-3,7'/);
    expect(await run("read_file", { path: "multi.pdf", pages: "3-2" })).toMatch(/^Error: Invalid page range '3-2'/);
    expect(await run("read_file", { path: "multi.pdf", pages: "9" })).toMatch(/^Error: Invalid page range '9': page 9 is past the last page \(8\)/);
    expect(await run("read_file", { path: "nope.pdf" })).toMatch(/^Error: file not found: nope.pdf/);
    await writeFile(join(ws, "blank.pdf"), makePdf(["", ""]));
    expect(await run("read_file", { path: "blank.pdf" })).toBe("(PDF has no extractable text: blank.pdf, pages 1-2)");
    await writeFile(join(ws, "broken.pdf"), "%PDF-1.4 this is not a pdf");
    expect(await run("read_file", { path: "broken.pdf" })).toMatch(/^Error: cannot read the PDF broken.pdf: /);
    await writeFile(join(ws, "notes.txt"), "x");
    expect(await run("read_file", { path: "notes.txt", pages: "1" })).toMatch(/^Error: pages applies to PDF files only; for notes.txt use offset and limit/);
  });

  it("PDF: at most 20 pages a call; the trailer names the next pages to ask for", async () => {
    const { ws, run } = await setup();
    await writeFile(join(ws, "long.pdf"), makePdf(Array.from({ length: 45 }, (_, i) => `Text of page ${i + 1}`)));
    const first = await run("read_file", { path: "long.pdf" });
    expect(first).toContain("--- Page 20 ---\nText of page 20");
    expect(first).not.toContain("Page 21 ---");
    expect(first.endsWith("\n\n(Showing pages 1-20 of 45. Use pages='21-40' to continue.)")).toBe(true);
    const last = await run("read_file", { path: "long.pdf", pages: "41-45" });
    expect(last).toMatch(/^--- Page 41 ---[\s\S]*Text of page 45$/);
  }, 60_000);

  it("DOCX, XLSX and PPTX come as text", async () => {
    const { ws, run } = await setup();
    await writeFile(join(ws, "test.docx"), makeDocx(["Title", "Paragraph 1", "", { table: [["Name", "Age"], ["Alice", "30"], ["", ""]] }, "Fish & chips <3"]));
    expect(await run("read_file", { path: "test.docx" })).toBe("Title\n\nParagraph 1\n\nName\tAge\nAlice\t30\n\nFish & chips <3");
    await writeFile(
      join(ws, "test.xlsx"),
      makeXlsx([
        ["Sheet1", [["Name", "Age"], ["Alice", 30], [null, null], ["Bob", null, true]]],
        ["Empty", []],
        ["Notes", [[null, "gap before"]]],
      ]),
    );
    expect(await run("read_file", { path: "test.xlsx" })).toBe("--- Sheet: Sheet1 ---\nName\tAge\nAlice\t30\nBob\t\tTRUE\n\n--- Sheet: Notes ---\n\tgap before");
    await writeFile(join(ws, "test.pptx"), makePptx([["Welcome", "to troupe"], [{ table: [["a", "b"], ["c", "d"]] }], [], ["Content"]]));
    expect(await run("read_file", { path: "test.pptx" })).toBe("--- Slide 1 ---\nWelcome\nto troupe\n\n--- Slide 2 ---\na\tb\nc\td\n\n--- Slide 4 ---\nContent");
  });

  it("XLSX rows stop at the character budget with a note; a streaming parse, not the whole sheet", async () => {
    const xlsx = makeXlsx([
      ["Big", Array.from({ length: 5_000 }, (_, i) => [`row ${i}`, i])],
      ["Later", [["never shown"]]],
    ]);
    const text = await extractOfficeText(xlsx, "xlsx", 1_000);
    expect(text.length).toBeLessThanOrEqual(1_000);
    expect(text).toMatch(/^--- Sheet: Big ---\nrow 0\t0\nrow 1\t1\n/);
    expect(text).toMatch(/\n\n\(Rows cut at ~1K characters; the rest of this sheet and any later sheets are not shown\)$/);
    expect(text).not.toContain("never shown");
  });

  it("office documents: corrupt, empty and oversized ones are answered clearly; long text is cut", async () => {
    const { ws, run } = await setup();
    await writeFile(join(ws, "bad.docx"), "not-a-zip");
    expect(await run("read_file", { path: "bad.docx" })).toMatch(/^Error: cannot read bad.docx: not a valid DOCX file .*password-protected/);
    await writeFile(join(ws, "empty.docx"), makeDocx([]));
    expect(await run("read_file", { path: "empty.docx" })).toBe("(DOCX has no extractable text: empty.docx)");
    await writeFile(join(ws, "large.docx"), makeDocx(["x".repeat(200_000)]));
    const large = await run("read_file", { path: "large.docx" });
    expect(large.length).toBeLessThanOrEqual(128_000 + 100);
    expect(large.endsWith("(Document text truncated at ~128K chars)")).toBe(true);
    // A zip bomb: a member that says it unpacks to more than the bound is refused before it is unpacked.
    await writeFile(join(ws, "bomb.xlsx"), claimSize(zipSync({ "xl/workbook.xml": strToU8("<workbook/>") }), 200 * 1024 * 1024));
    expect(await run("read_file", { path: "bomb.xlsx" })).toMatch(/^Error: cannot read bomb.xlsx: the XLSX file is too large to read safely: xl\/workbook.xml inside it unpacks to/);
    await writeFile(join(ws, "huge.docx"), claimSize(makeDocx(["x"]), 40 * 1024 * 1024));
    expect(await run("read_file", { path: "huge.docx" })).toMatch(/^Error: cannot read huge.docx: the DOCX file is too large to read safely: .* is 41943040 bytes of XML \(the limit is 32 MB\)/);
    await writeFile(join(ws, "nosheets.xlsx"), zipSync({ "xl/workbook.xml": strToU8("<workbook/>") }));
    expect(await run("read_file", { path: "nosheets.xlsx" })).toBe("(XLSX has no extractable text: nosheets.xlsx)");
  });

  it("skills/<name>/SKILL.md not in the workspace is read from the built-in skills, within the readable roots", async () => {
    const ws = await tmp();
    const run = runner([readFileTool(sandboxOf(ws, [BUILTIN_SKILLS_DIR]))], ws);
    const r = await run("read_file", { path: "skills/cron/SKILL.md", limit: 5 });
    expect(r).not.toMatch(/^Error/);
    expect(r.toLowerCase()).toContain("cron");
    expect(await run("read_file", { path: "skills/../../package.json" })).toMatch(/^Error: (file not found|access denied)/);
    // The workspace's own copy wins; without the skills among the readable roots there is no fallback.
    await mkdir(join(ws, "skills/cron"), { recursive: true });
    await writeFile(join(ws, "skills/cron/SKILL.md"), "my own cron skill");
    expect(await run("read_file", { path: "skills/cron/SKILL.md" })).toMatch(/^1\| my own cron skill/);
    expect(await runner([readFileTool(sandboxOf(ws))], ws)("read_file", { path: "skills/memory/SKILL.md" })).toMatch(/^Error: file not found: skills\/memory\/SKILL.md/);
  });

  it("the description mentions images and documents", () => {
    const d = readFileTool(sandboxOf("/tmp")).description.toLowerCase();
    expect(d).toContain("image");
    expect(d).toMatch(/pdf.*docx.*xlsx.*pptx/);
    expect(d).not.toContain("cannot read");
  });
});

describe("attachToolImages: an image result reaches the model as an image part", () => {
  const tmp = useTempDirs();
  const call = (id: string, path: string): ChatMessage => ({
    role: "assistant",
    content: null,
    tool_calls: [{ id, type: "function", function: { name: "read_file", arguments: JSON.stringify({ path }) } }],
  });

  it("follows the run of tool results in a user message, images first; earlier turns are left as text", async () => {
    const ws = await tmp();
    await writeFile(join(ws, "a.png"), PNG_1PX);
    const tool = readFileTool(sandboxOf(ws));
    const image = `(Image file: a.png [image/png, ${PNG_1PX.length} bytes])`;
    const messages: ChatMessage[] = [
      { role: "system", content: "s" },
      { role: "user", content: "earlier" },
      call("old", "a.png"),
      { role: "tool", tool_call_id: "old", name: "read_file", content: image },
      { role: "assistant", content: "It is one pixel." },
      { role: "user", content: "look again" },
      call("c1", "a.png"),
      { role: "tool", tool_call_id: "c1", name: "read_file", content: image },
    ];
    const out = await attachToolImages(messages, (name) => (name === "read_file" ? tool : undefined));
    expect(out.slice(0, messages.length)).toEqual(messages);
    expect(out).toHaveLength(messages.length + 1);
    expect(out.at(-1)).toEqual({
      role: "user",
      content: [
        { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_1PX.toString("base64")}` } },
        { type: "text", text: "[Image 1 above: the read_file result of call c1]" },
      ],
    });
    // An injected user message after the results takes the images in, rather than two user messages in a row.
    const injected = await attachToolImages([...messages, { role: "user", content: "and this?" }], () => tool);
    expect(injected).toHaveLength(messages.length + 1);
    expect(injected.at(-1)).toMatchObject({ role: "user", content: [{ type: "image_url" }, { type: "text" }, { type: "text", text: "and this?" }] });
    // Nothing to attach: the very same array.
    const plain: ChatMessage[] = [{ role: "user", content: "hi" }];
    expect(await attachToolImages(plain, () => tool)).toBe(plain);
  });

  it("told how many messages the turn added: a failed turn's image stays out, and one before a cut-off answer stays in", async () => {
    const ws = await tmp();
    await writeFile(join(ws, "a.png"), PNG_1PX);
    const tool = readFileTool(sandboxOf(ws));
    const image = (p: string) => `(Image file: ${p} [image/png, ${PNG_1PX.length} bytes])`;
    const messages: ChatMessage[] = [
      { role: "system", content: "s" },
      // An earlier turn that failed: its tool result, and no final answer after it.
      { role: "user", content: "earlier" },
      call("old", "a.png"),
      { role: "tool", tool_call_id: "old", name: "read_file", content: image("a.png") },
      { role: "user", content: "look again" },
      // This turn: a tool round, then an answer cut off at the token limit and the prompt to go on.
      call("c1", "a.png"),
      { role: "tool", tool_call_id: "c1", name: "read_file", content: image("a.png") },
      { role: "assistant", content: "It is one pix" },
      { role: "user", content: "(go on)" },
    ];
    const out = await attachToolImages(messages, () => tool, 4);
    const texts = out.flatMap((m) => (Array.isArray(m.content) ? m.content.flatMap((p) => (p.type === "text" ? [p.text] : [])) : []));
    expect(texts.filter((t) => t.startsWith("[Image"))).toEqual(["[Image 1 above: the read_file result of call c1]"]);
  });

  it(`keeps at most ${MAX_TOOL_IMAGES} images, the newest, and names the rest`, async () => {
    const ws = await tmp();
    await writeFile(join(ws, "a.png"), PNG_1PX);
    const tool = readFileTool(sandboxOf(ws));
    const image = `(Image file: a.png [image/png, ${PNG_1PX.length} bytes])`;
    const messages: ChatMessage[] = [{ role: "user", content: "many" }];
    for (let i = 0; i < MAX_TOOL_IMAGES + 2; i++) messages.push(call(`c${i}`, "a.png"), { role: "tool", tool_call_id: `c${i}`, name: "read_file", content: image });
    const out = await attachToolImages(messages, () => tool);
    const parts = out.flatMap((m) => (m.role === "user" && Array.isArray(m.content) ? m.content : []));
    expect(parts.filter((p) => p.type === "image_url")).toHaveLength(MAX_TOOL_IMAGES);
    const texts = parts.flatMap((p) => (p.type === "text" ? [p.text] : []));
    expect(texts.slice(0, 2)).toEqual([
      `[The image from read_file call c0 is left out: over the cap of ${MAX_TOOL_IMAGES} images or their size in one request]`,
      `[The image from read_file call c1 is left out: over the cap of ${MAX_TOOL_IMAGES} images or their size in one request]`,
    ]);
  });
});

describe("chatWithImageFallback: a model without vision still answers", () => {
  const withImage: ChatMessage[] = [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png;base64,AA==" } }, { type: "text", text: "what is this?" }] }];
  const refused = (status: number) => Object.assign(new Error(`HTTP ${status}`), { cause: { status } });

  it("a request with images refused with a 4xx is sent once more with the images named in text", async () => {
    const sent: ChatMessage[][] = [];
    const reply = await chatWithImageFallback(async (messages) => {
      sent.push(messages);
      if (sent.length === 1) throw refused(400);
      return "ok";
    }, withImage);
    expect(reply).toBe("ok");
    expect(sent[1]).toEqual(withoutImages(withImage));
    expect(sent[1]![0]!.content).toEqual([
      { type: "text", text: "[Image not delivered to model — do not describe or reference it]" },
      { type: "text", text: "what is this?" },
    ]);
  });

  it("other failures, and failures of requests without images, are not retried here", async () => {
    for (const [messages, err] of [
      [withImage, refused(401)],
      [withImage, refused(429)],
      [withImage, new Error("socket hang up")],
      [[{ role: "user", content: "text only" }] as ChatMessage[], refused(400)],
    ] as const) {
      let calls = 0;
      await expect(
        chatWithImageFallback(async () => {
          calls++;
          throw err;
        }, messages),
      ).rejects.toBe(err);
      expect(calls).toBe(1);
    }
  });
});

describe("glob (nanobot's cases)", () => {
  const tmp = useTempDirs();

  it("matches a name at any depth and skips noise directories", async () => {
    const ws = await tmp();
    for (const dir of ["src", "nested", "node_modules"]) await mkdir(join(ws, dir));
    for (const f of ["src/app.py", "nested/util.py", "node_modules/skip.py"]) await writeFile(join(ws, f), "print('ok')\n");
    const r = await runner([globTool(sandboxOf(ws))], ws)("glob", { pattern: "*.py", path: "." });
    expect(r.split("\n").sort()).toEqual(["nested/util.py", "src/app.py"]);
  });

  it("entry_type dirs returns directories only; both returns both", async () => {
    const ws = await tmp();
    await mkdir(join(ws, "src/api"), { recursive: true });
    await writeFile(join(ws, "src/api/handlers.py"), "ok\n");
    await writeFile(join(ws, "src/api.md"), "ok\n");
    const run = runner([globTool(sandboxOf(ws))], ws);
    expect(await run("glob", { pattern: "api", path: "src", entry_type: "dirs" })).toBe("src/api/");
    expect((await run("glob", { pattern: "api*", path: "src", entry_type: "both" })).split("\n").sort()).toEqual(["src/api.md", "src/api/"]);
    expect(await run("glob", { pattern: "api*", path: "src" })).toBe("src/api.md");
  });

  it("head_limit and offset page the newest-first list, with nanobot's pagination note", async () => {
    const ws = await tmp();
    await mkdir(join(ws, "src"));
    for (const [name, t] of [["a.py", 1], ["b.py", 2], ["c.py", 3]] as const) {
      await writeFile(join(ws, "src", name), name);
      await setTime(join(ws, "src", name), t);
    }
    const run = runner([globTool(sandboxOf(ws))], ws);
    expect(await run("glob", { pattern: "*.py", path: "src", head_limit: 1, offset: 1 })).toBe("src/b.py\n\n(pagination: limit=1, offset=1)");
    expect(await run("glob", { pattern: "*.py", path: "src", offset: 2 })).toBe("src/a.py\n\n(pagination: offset=2)");
    expect(await run("glob", { pattern: "*.py", max_results: 2 })).toBe("src/c.py\nsrc/b.py\n\n(pagination: limit=2, offset=0)");
    expect(await run("glob", { pattern: "*.py", head_limit: 0 })).toBe("src/c.py\nsrc/b.py\nsrc/a.py");
    expect(await run("glob", { pattern: "*.py", offset: 5 })).toBe("No more matches: offset 5 is past the 3 path(s) that match *.py");
  });

  it("the default head_limit is 250", async () => {
    const ws = await tmp();
    await Promise.all(Array.from({ length: 260 }, (_, i) => writeFile(join(ws, `f${i}.txt`), "")));
    const r = await runner([globTool(sandboxOf(ws))], ws, 1_000_000)("glob", { pattern: "*.txt" });
    expect(r.split("\n\n")[0]!.split("\n")).toHaveLength(250);
    expect(r.endsWith("(pagination: limit=250, offset=0)")).toBe(true);
  });

  it("a path outside the workspace is an error", async () => {
    const ws = await tmp();
    const outside = await tmp();
    expect(await runner([globTool(sandboxOf(ws))], ws)("glob", { pattern: "*.txt", path: outside })).toMatch(/^Error: access denied: .* is outside the workspace/);
  });
});

describe("grep (nanobot's cases)", () => {
  const tmp = useTempDirs();
  async function setup() {
    const ws = await tmp();
    return { ws, run: runner([grepTool(sandboxOf(ws))], ws, 1_000_000) };
  }

  it("glob filter and context before/after, in nanobot's blocks", async () => {
    const { ws, run } = await setup();
    await mkdir(join(ws, "src"));
    await writeFile(join(ws, "src/main.py"), "alpha\nbeta\nmatch_here\ngamma\n");
    await writeFile(join(ws, "README.md"), "match_here\n");
    const expected = "src/main.py:3\n  2| beta\n> 3| match_here\n  4| gamma";
    expect(await run("grep", { pattern: "match_here", glob: "*.py", output_mode: "content", context_before: 1, context_after: 1 })).toBe(expected);
    expect(await run("grep", { pattern: "match_here", glob: "*.py", output_mode: "content", "-B": 1, "-A": 1 })).toBe(expected);
    expect(await run("grep", { pattern: "match_here", glob: "*.py", output_mode: "content", "-C": 1 })).toBe(expected);
    expect(await run("grep", { pattern: "match_here", glob: "*.py", output_mode: "content", "-C": 3, "-A": 0 })).toBe(
      "src/main.py:3\n  1| alpha\n  2| beta\n> 3| match_here",
    );
  });

  it("defaults to files_with_matches, newest first, unique paths", async () => {
    const { ws, run } = await setup();
    await mkdir(join(ws, "src"));
    await writeFile(join(ws, "src/a.py"), "needle\nneedle\n");
    await writeFile(join(ws, "src/b.py"), "needle\n");
    await setTime(join(ws, "src/a.py"), 1);
    await setTime(join(ws, "src/b.py"), 2);
    expect(await run("grep", { pattern: "needle", path: "src" })).toBe("src/b.py\nsrc/a.py");
  });

  it("case_insensitive, fixed_strings and type", async () => {
    const { ws, run } = await setup();
    await mkdir(join(ws, "memory"));
    await writeFile(join(ws, "memory/HISTORY.md"), "[2026-04-02 10:00] OAuth token rotated\n");
    expect(await run("grep", { pattern: "oauth", path: "memory/HISTORY.md", case_insensitive: true, output_mode: "content" })).toBe(
      "memory/HISTORY.md:1\n> 1| [2026-04-02 10:00] OAuth token rotated",
    );
    expect(await run("grep", { pattern: "[2026-04-02 10:00]", path: "memory/HISTORY.md", fixed_strings: true, output_mode: "content" })).toBe(
      "memory/HISTORY.md:1\n> 1| [2026-04-02 10:00] OAuth token rotated",
    );
    expect(await run("grep", { pattern: "a.b", fixed_strings: true })).toMatch(/^No matches found for pattern 'a.b' in \./);
    await mkdir(join(ws, "src"));
    await writeFile(join(ws, "src/a.py"), "needle\n");
    await writeFile(join(ws, "src/b.md"), "needle\n");
    await writeFile(join(ws, "src/c.lua"), "needle\n");
    expect(await run("grep", { pattern: "needle", path: "src", type: "py" })).toBe("src/a.py");
    expect(await run("grep", { pattern: "needle", path: "src", type: "markdown" })).toBe("src/b.md");
    expect(await run("grep", { pattern: "needle", path: "src", type: "lua" })).toBe("src/c.lua");
    expect(await run("grep", { pattern: "(" })).toMatch(/^Error: invalid regular expression \(.*Pass fixed_strings: true/);
  });

  it("head_limit, offset and the legacy aliases page files and match blocks", async () => {
    const { ws, run } = await setup();
    await mkdir(join(ws, "src"));
    for (const [name, t] of [["a.py", 1], ["b.py", 2], ["c.py", 3]] as const) {
      await writeFile(join(ws, "src", name), "needle\n");
      await setTime(join(ws, "src", name), t);
    }
    expect(await run("grep", { pattern: "needle", path: "src", head_limit: 1, offset: 1 })).toBe("src/b.py\n\n(pagination: limit=1, offset=1)");
    expect(await run("grep", { pattern: "needle", path: "src", output_mode: "files_with_matches", max_results: 2 })).toBe(
      "src/c.py\nsrc/b.py\n\n(pagination: limit=2, offset=0)",
    );
    expect(await run("grep", { pattern: "needle", path: "src", output_mode: "content", max_matches: 1, offset: 1 })).toBe(
      "src/b.py:1\n> 1| needle\n\n(pagination: limit=1, offset=1)",
    );
    expect(await run("grep", { pattern: "needle", path: "src", output_mode: "content", offset: 2 })).toBe("src/c.py:1\n> 1| needle\n\n(pagination: offset=2)");
  });

  it("count mode reports counts per file and the total", async () => {
    const { ws, run } = await setup();
    await mkdir(join(ws, "logs"));
    await writeFile(join(ws, "logs/one.log"), "warn\nok\nwarn\n");
    await writeFile(join(ws, "logs/two.log"), "warn\n");
    const r = await run("grep", { pattern: "warn", path: "logs", output_mode: "count" });
    expect(r).toContain("logs/one.log: 2");
    expect(r).toContain("logs/two.log: 1");
    expect(r).toContain("(total matches: 3 in 2 files)");
  });

  it("skips binary and large files and says so; a large file named by path is searched", async () => {
    const { ws, run } = await setup();
    await writeFile(join(ws, "binary.bin"), Buffer.from([0, 1, 2, 0, 0, 0, 0, 0]));
    await writeFile(join(ws, "large.txt"), `${"x".repeat(2_000_001)}\nneedle\n`);
    const r = await run("grep", { pattern: "needle", path: "." });
    expect(r).toMatch(/^No matches found for pattern 'needle' in \./);
    expect(r).toContain("(skipped 1 binary/unreadable files)");
    expect(r).toContain("(skipped 1 large files over 2000000 bytes");
    expect(await run("grep", { pattern: "needle", path: "large.txt" })).toBe("large.txt");
  });

  it("content output stops at its size cap and says so", async () => {
    const { ws, run } = await setup();
    await writeFile(join(ws, "many.txt"), Array.from({ length: 1000 }, (_, i) => `needle ${i} ${"y".repeat(200)}`).join("\n"));
    const r = await run("grep", { pattern: "needle", output_mode: "content", head_limit: 0 });
    expect(r.length).toBeLessThan(130_000);
    expect(r).toMatch(/\(output truncated due to size; narrow the search or page with offset\)$/);
  });

  it("unknown option values are refused with the allowed ones", async () => {
    const { run } = await setup();
    const r = await run("grep", { pattern: "x", output_mode: "lines" });
    expect(r).toMatch(/^Error: invalid arguments for grep: output_mode: /);
    expect(r.endsWith(TOOL_ERROR_HINT)).toBe(true);
    expect(await run("grep", { pattern: "x", "-C": 99 })).toMatch(/^Error: invalid arguments for grep: -C: /);
  });

  it("a path outside the workspace is an error", async () => {
    const { run } = await setup();
    const outside = await tmp();
    await writeFile(join(outside, "outside-search.txt"), "secret\n");
    expect(await run("grep", { pattern: "secret", path: join(outside, "outside-search.txt") })).toMatch(/^Error: access denied/);
  });
});
