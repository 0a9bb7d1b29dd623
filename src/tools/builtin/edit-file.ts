import { readFile, writeFile } from "node:fs/promises";
import { distance } from "fastest-levenshtein";
import { z } from "zod";
import { defineTool, ToolError } from "../contract.js";
import { displayPath, resolveToolPath, type Sandbox } from "../sandbox.js";
import { assertReadableFile } from "./read-file.js";

const params = z.object({
  path: z.string().describe("File path, relative to the workspace or absolute"),
  old_text: z.string().min(1).describe("Exact text to replace, including whitespace and indentation"),
  new_text: z.string().describe("Replacement text"),
  occurrence: z.number().int().min(1).optional().describe("Which match to replace (1-based) when old_text occurs several times"),
  replace_all: z.boolean().optional().describe("Replace every occurrence"),
});

function occurrences(text: string, needle: string): number[] {
  const found: number[] = [];
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) found.push(at);
  return found;
}

const lineOf = (text: string, index: number) => text.slice(0, index).split("\n").length;

/** The window of lines most like `needle`, for a "did you mean" answer. */
export function closestRegion(text: string, needle: string): { startLine: number; lines: string[]; similarity: number } | undefined {
  const lines = text.split("\n");
  const size = Math.max(1, needle.split("\n").length);
  // Bound the work on big files: compare at most ~2,000 windows.
  const step = Math.max(1, Math.floor(lines.length / 2_000));
  let best: { startLine: number; lines: string[]; similarity: number } | undefined;
  for (let i = 0; i + size <= Math.max(lines.length, size); i += step) {
    const window = lines.slice(i, i + size);
    const candidate = window.join("\n");
    const longest = Math.max(candidate.length, needle.length) || 1;
    const similarity = 1 - distance(candidate, needle) / longest;
    if (!best || similarity > best.similarity) best = { startLine: i + 1, lines: window, similarity };
  }
  return best;
}

export function editFileTool(sandbox: Sandbox) {
  return defineTool({
    name: "edit_file",
    description:
      "Replace old_text with new_text in a file. old_text must match exactly (whitespace included); if it occurs several times, give more context, an occurrence number, or replace_all.",
    parameters: params,
    async execute({ path, old_text, new_text, occurrence, replace_all }) {
      const full = resolveToolPath(sandbox, path, "write");
      const shown = displayPath(sandbox, full);
      await assertReadableFile(full, shown);
      const original = await readFile(full, "utf8");
      // Files with CRLF endings are matched and written back with CRLF.
      const crlf = original.includes("\r\n");
      const text = crlf ? original.replace(/\r\n/g, "\n") : original;
      const oldText = old_text.replace(/\r\n/g, "\n");
      const newText = new_text.replace(/\r\n/g, "\n");
      const found = occurrences(text, oldText);
      if (found.length === 0) {
        const near = closestRegion(text, oldText);
        const hint = near && near.similarity > 0.4
          ? `\nThe closest region (lines ${near.startLine}-${near.startLine + near.lines.length - 1}, ${Math.round(near.similarity * 100)}% similar) is:\n` +
            near.lines.map((l, i) => `${near.startLine + i}| ${l}`).join("\n") +
            "\nCopy the text exactly from there (read_file shows it) and try again."
          : "\nNo similar region was found; read the file first.";
        throw new ToolError(`old_text was not found in ${shown}.${hint}`);
      }
      let targets = found;
      if (!replace_all && occurrence !== undefined) {
        const at = found[occurrence - 1];
        if (at === undefined) throw new ToolError(`occurrence ${occurrence} requested, but old_text occurs ${found.length} time(s) in ${shown}`);
        targets = [at];
      } else if (!replace_all && found.length > 1) {
        const where = found.map((at) => lineOf(text, at)).join(", ");
        throw new ToolError(
          `old_text occurs ${found.length} times in ${shown} (at lines ${where}). ` +
            "Include more surrounding lines to make it unique, or pass occurrence (1-based) or replace_all.",
        );
      }
      let updated = text;
      for (const at of [...targets].reverse()) updated = updated.slice(0, at) + newText + updated.slice(at + oldText.length);
      await writeFile(full, crlf ? updated.replace(/\n/g, "\r\n") : updated, "utf8");
      const lines = targets.map((at) => lineOf(text, at)).join(", ");
      return `Edited ${shown}: replaced ${targets.length} occurrence(s) at line ${lines}.`;
    },
  });
}
