import { readFile, stat } from "node:fs/promises";
import { isBinaryFile } from "isbinaryfile";
import { z } from "zod";
import { defineTool, ToolError } from "../contract.js";
import type { FileReads } from "../file-reads.js";
import { displayPath, resolveToolPath, type Sandbox } from "../sandbox.js";

const DEFAULT_LIMIT = 2_000;
const MAX_LINE_CHARS = 2_000;
/** Files larger than this are read by range only, never whole. */
const MAX_FILE_BYTES = 50 * 1024 * 1024;

const params = z.object({
  path: z.string().describe("File path, relative to the workspace or absolute"),
  offset: z.number().int().min(1).optional().describe("Line number to start from (1-based)"),
  limit: z.number().int().min(1).max(10_000).optional().describe(`Number of lines to read (default ${DEFAULT_LIMIT})`),
});

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

export function readFileTool(sandbox: Sandbox, reads?: FileReads) {
  return defineTool({
    name: "read_file",
    description:
      "Read a text file. Lines come numbered (`N| text`). Use offset and limit to page through long files.",
    parameters: params,
    readOnly: true,
    async execute({ path, offset = 1, limit = DEFAULT_LIMIT }, ctx) {
      const full = resolveToolPath(sandbox, path, "read");
      const shown = displayPath(sandbox, full);
      const size = await assertReadableFile(full, shown);
      if (size === 0) return `(${shown} is empty)`;
      const buffer = await readFile(full);
      // edit_file warns about files the model has not read in this turn.
      reads?.saw(ctx, full, buffer);
      if (await isBinaryFile(buffer, size)) {
        throw new ToolError(`${shown} is a binary file (${size} bytes); read_file only reads text`);
      }
      const lines = buffer.toString("utf8").split(/\r?\n/);
      if (lines.at(-1) === "") lines.pop();
      if (offset > lines.length) throw new ToolError(`offset ${offset} is past the end of ${shown} (${lines.length} lines)`);
      const slice = lines.slice(offset - 1, offset - 1 + limit);
      const width = String(offset + slice.length - 1).length;
      const body = slice
        .map((line, i) => {
          const text = line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}… [line truncated]` : line;
          return `${String(offset + i).padStart(width)}| ${text}`;
        })
        .join("\n");
      const end = offset + slice.length - 1;
      const more = end < lines.length ? `\n\n[Lines ${offset}-${end} of ${lines.length}. Use offset=${end + 1} to read more.]` : "";
      return body + more;
    },
  });
}
