import { statSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { extname, isAbsolute, resolve } from "node:path";
import { isBinaryFile } from "isbinaryfile";
import { z } from "zod";
import { lazySchema } from "../../lazy-schema.js";
import { imagePart, MAX_IMAGE_BYTES, sniffImageMime } from "../../context/media.js";
import { defineTool, ToolError } from "../contract.js";
import { BUILTIN_SKILLS_DIR } from "../../context/templates.js";
import type { FileReads } from "../file-reads.js";
import { displayPath, isInside, resolveToolPath, type Sandbox } from "../sandbox.js";

const DEFAULT_LIMIT = 2_000;
const MAX_LINE_CHARS = 2_000;
/** nanobot's budget for one read: longer output is cut at a line and the trailer says where to go on. */
export const MAX_READ_CHARS = 128_000;
/** Files larger than this are read by range only, never whole. */
const MAX_FILE_BYTES = 50 * 1024 * 1024;
const OFFICE = new Set([".docx", ".xlsx", ".pptx"]);
/** Text whatever a byte sniffer says (a Latin-1 CSV looks binary to it), unless it holds a NUL byte. */
const TEXT_EXTENSIONS = new Set([".txt", ".md", ".csv", ".tsv", ".json", ".xml", ".html", ".htm", ".log", ".yaml", ".yml", ".toml", ".ini", ".cfg"]);

const params = lazySchema(() => z.object({
  path: z.string().describe("File path, relative to the workspace or absolute"),
  offset: z.number().int().min(1).optional().describe("Line number to start from (1-based, default 1)"),
  limit: z.number().int().min(1).max(10_000).optional().describe(`Number of lines to read (default ${DEFAULT_LIMIT})`),
  pages: z.string().optional().describe("PDF only: pages to read, e.g. '1-5' or '1-3,7' (default all, at most 20 per call)"),
  force: z.boolean().optional().describe("Accepted for nanobot compatibility: troupe always returns the content"),
}));

/** Regular files only: /dev/zero, FIFOs and sockets would block or never end. */
export async function assertReadableFile(path: string, shown: string): Promise<number> {
  const info = await stat(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") throw new ToolError(`file not found: ${shown}`);
    throw new ToolError(`cannot read ${shown}: ${err.message}`);
  });
  if (info.isDirectory()) throw new ToolError(`${shown} is a directory; use list_dir to see what it holds`);
  if (!info.isFile()) throw new ToolError(`${shown} is not a regular file (a device, FIFO or socket) and cannot be read`);
  if (info.size > MAX_FILE_BYTES) throw new ToolError(`${shown} is ${info.size} bytes, too large to read (limit ${MAX_FILE_BYTES})`);
  return info.size;
}

/** The text an image read returns; the request builder finds the image again from it (imageOf). */
const imageResult = (shown: string, mime: string, size: number) => `(Image file: ${shown} [${mime}, ${size} bytes])`;
const IMAGE_RESULT = /^\(Image file: (.+) \[(image\/(?:png|jpeg|gif|webp)), \d+ bytes\]\)$/;

/**
 * `skills/<name>/…` that is not in the workspace, read from the built-in skills as nanobot does
 * (the model is told of skills by that path); still subject to the sandbox's readable roots.
 */
function builtinSkillPath(sandbox: Sandbox, input: string): string | undefined {
  const parts = input.trim().split(/[\\/]+/);
  if (isAbsolute(input.trim()) || parts[0] !== "skills" || parts.length < 2) return undefined;
  const candidate = resolve(BUILTIN_SKILLS_DIR, ...parts.slice(1));
  if (!isInside(candidate, BUILTIN_SKILLS_DIR) || !statSync(candidate, { throwIfNoEntry: false })?.isFile()) return undefined;
  try {
    return resolveToolPath(sandbox, candidate, "read");
  } catch {
    return undefined;
  }
}

/** UTF-8, or Latin-1 for a text file in an older encoding (a legacy CSV), never replacement characters. */
function decodeText(buffer: Buffer): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(buffer);
  } catch {
    return buffer.toString("latin1");
  }
}

function numberedLines(text: string, shown: string, offset: number, limit: number): string {
  const lines = text.replace(/\r\n/g, "\n").split("\n");
  if (lines.at(-1) === "") lines.pop();
  const total = lines.length;
  if (offset > total) throw new ToolError(`offset ${offset} is beyond end of file ${shown} (${total} lines)`);
  const out: string[] = [];
  let chars = 0;
  const last = Math.min(offset - 1 + limit, total);
  for (let i = offset - 1; i < last; i++) {
    const line = lines[i]!;
    const numbered = `${i + 1}| ${line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}… [line truncated]` : line}`;
    chars += numbered.length + 1;
    if (chars > MAX_READ_CHARS && out.length > 0) break;
    out.push(numbered);
  }
  const end = offset - 1 + out.length;
  const trailer =
    end < total ? `(Showing lines ${offset}-${end} of ${total}. Use offset=${end + 1} to continue.)` : `(End of file — ${total} lines total)`;
  return `${out.join("\n")}\n\n${trailer}`;
}

async function readPdf(full: string, shown: string, pages: string | undefined): Promise<string> {
  const { extractPdfText, pdfTrailer } = await import("../documents/pdf.js");
  const { PageRangeError } = await import("../documents/pages.js");
  try {
    const r = await extractPdfText(new Uint8Array(await readFile(full)), pages, MAX_READ_CHARS);
    const body = r.text || `(PDF has no extractable text: ${shown}${r.read.length ? `, pages ${r.read[0]}-${r.read.at(-1)}` : ""})`;
    return body + pdfTrailer(r);
  } catch (err) {
    if (err instanceof PageRangeError) {
      throw new ToolError(`Invalid page range '${pages}': ${err.message}. Use a form like '1-5' or '1-3,7'.`);
    }
    throw new ToolError(`cannot read the PDF ${shown}: ${(err as Error).message}`);
  }
}

async function readOffice(full: string, shown: string, ext: string): Promise<string> {
  const { extractOfficeText } = await import("../documents/office.js");
  const kind = ext.slice(1) as "docx" | "xlsx" | "pptx";
  let text: string;
  try {
    text = await extractOfficeText(new Uint8Array(await readFile(full)), kind, MAX_READ_CHARS);
  } catch (err) {
    throw new ToolError(`cannot read ${shown}: ${(err as Error).message}`);
  }
  if (!text) return `(${kind.toUpperCase()} has no extractable text: ${shown})`;
  return text.length > MAX_READ_CHARS ? `${text.slice(0, MAX_READ_CHARS)}\n\n(Document text truncated at ~128K chars)` : text;
}

export function readFileTool(sandbox: Sandbox, reads?: FileReads) {
  return defineTool({
    name: "read_file",
    description:
      "Read a file: text, image, or document. Text comes with numbered lines (`N| text`) and a note saying where the file goes on or that it ended; " +
      "use offset and limit to page through long files. Images (PNG, JPEG, GIF, WebP) are shown to you for analysis. " +
      "PDF (text per page; pages like '1-3,7'), DOCX, XLSX (tab-separated rows per sheet) and PPTX (text per slide) documents come as text. " +
      "Reads over ~128K characters are cut.",
    parameters: params,
    readOnly: true,
    async execute({ path, offset = 1, limit = DEFAULT_LIMIT, pages }, ctx) {
      let full = resolveToolPath(sandbox, path, "read");
      if (!statSync(full, { throwIfNoEntry: false })) full = builtinSkillPath(sandbox, path) ?? full;
      const shown = displayPath(sandbox, full);
      const size = await assertReadableFile(full, shown);
      const ext = extname(full).toLowerCase();
      if (ext === ".pdf") return readPdf(full, shown, pages);
      if (pages !== undefined && pages.trim() !== "") throw new ToolError(`pages applies to PDF files only; for ${shown} use offset and limit`);
      if (OFFICE.has(ext)) return readOffice(full, shown, ext);
      const buffer = await readFile(full);
      // edit_file warns about files the model has not read in this turn.
      reads?.saw(ctx, full, buffer);
      if (size === 0) return `(Empty file: ${shown})`;
      const mime = sniffImageMime(buffer);
      if (mime) {
        if (size > MAX_IMAGE_BYTES) {
          throw new ToolError(`${shown} is a ${size}-byte image, larger than the ${MAX_IMAGE_BYTES / 1024 / 1024} MB an image sent to the model may be; make a smaller copy (e.g. with exec) and read that`);
        }
        return imageResult(shown, mime, size);
      }
      const text = TEXT_EXTENSIONS.has(ext) ? !buffer.includes(0) : !(await isBinaryFile(buffer, size));
      if (!text) {
        throw new ToolError(`${shown} is a binary file (${size} bytes); read_file reads text, images (PNG, JPEG, GIF, WebP), PDF, DOCX, XLSX and PPTX`);
      }
      return numberedLines(decodeText(buffer), shown, offset, limit);
    },
    async imageOf(result) {
      const m = IMAGE_RESULT.exec(result);
      if (!m) return undefined;
      try {
        // The same checks as the read: the sandbox may have changed, or the file been swapped for a link.
        const full = resolveToolPath(sandbox, m[1]!, "read");
        const info = await stat(full);
        if (!info.isFile() || info.size > MAX_IMAGE_BYTES) return undefined;
        const bytes = await readFile(full);
        return sniffImageMime(bytes) === m[2] ? imagePart(m[2]!, bytes) : undefined;
      } catch {
        return undefined;
      }
    },
  });
}
