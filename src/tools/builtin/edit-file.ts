import { mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { basename, dirname, extname } from "node:path";
import { distance } from "fastest-levenshtein";
import { z } from "zod";
import { lazySchema } from "../../lazy-schema.js";
import { defineTool, ToolError, type ToolContext } from "../contract.js";
import type { FileReads } from "../file-reads.js";
import { displayPath, resolveToolPath, type Sandbox } from "../sandbox.js";
import { coversLine, findMatches, keepIndentation, keepQuoteStyle, nearMissReasons, type Match } from "./edit-match.js";
import { assertReadableFile } from "./read-file.js";

const params = lazySchema(() => z.object({
  path: z.string().describe("File path, relative to the workspace or absolute"),
  old_text: z
    .string()
    .describe("The text to replace, copied from read_file (whitespace included). An empty old_text creates the file (or fills an empty one) with new_text"),
  new_text: z.string().describe("Replacement text"),
  occurrence: z.number().int().min(1).nullish().describe("Which match to replace (1-based) when old_text occurs several times"),
  line_hint: z
    .number()
    .int()
    .min(1)
    .nullish()
    .describe("The 1-based line (from read_file's numbering) the match must cover; picks among several matches"),
  replace_all: z.boolean().nullish().describe("Replace every occurrence"),
  expected_replacements: z.number().int().min(1).nullish().describe("The number of replacements that must be made; the edit is refused otherwise"),
}));

/** Markdown keeps trailing spaces (two of them are a line break); elsewhere they are trimmed from new_text. */
const MARKDOWN = new Set([".md", ".mdx", ".markdown"]);

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

function notFound(text: string, oldText: string, shown: string): ToolError {
  const near = closestRegion(text, oldText);
  const reasons = near ? nearMissReasons(oldText.replace(/\n+$/, ""), near.lines.join("\n").replace(/\n+$/, "")) : [];
  const cause = reasons.length ? `\nPossible cause: ${reasons.join(", ")}.` : "";
  const hint =
    near && near.similarity > 0.4
      ? `\nThe closest region (lines ${near.startLine}-${near.startLine + near.lines.length - 1}, ${Math.round(near.similarity * 100)}% similar) is:\n` +
        near.lines.map((l, i) => `${near.startLine + i}| ${l}`).join("\n") +
        "\nCopy the text exactly from there (read_file shows it) and try again."
      : "\nNo similar region was found; read the file first.";
  return new ToolError(`old_text was not found in ${shown}.${cause}${hint}`);
}

/** A missing file, with the names in its directory that look like a typo of it. */
async function missing(full: string, shown: string): Promise<ToolError> {
  const name = basename(full);
  const siblings = await readdir(dirname(full)).catch(() => [] as string[]);
  const close = siblings.filter((s) => s !== name && distance(s.toLowerCase(), name.toLowerCase()) <= Math.max(2, Math.floor(name.length / 4))).slice(0, 3);
  const dir = dirname(shown) === "." ? "" : `${dirname(shown)}/`;
  const guess = close.length ? ` Did you mean ${close.map((c) => dir + c).join(", ")}?` : "";
  return new ToolError(`file not found: ${shown}.${guess} To create a file, pass old_text "" (or use write_file).`);
}

const lineList = (matches: Match[]) => matches.map((m) => m.line).join(", ");

/** The matches the arguments choose, or the reason they choose none. */
function choose(
  matches: Match[],
  shown: string,
  { occurrence, line_hint, replace_all }: { occurrence?: number | null; line_hint?: number | null; replace_all?: boolean | null },
): Match[] {
  if (replace_all) return matches;
  if (occurrence != null) {
    const m = matches[occurrence - 1];
    if (!m) throw new ToolError(`occurrence ${occurrence} is out of range: old_text occurs ${matches.length} time(s) in ${shown} (at line ${lineList(matches)})`);
    return [m];
  }
  if (line_hint != null) {
    const covering = matches.filter((m) => coversLine(m, line_hint));
    if (covering.length === 0) {
      throw new ToolError(
        `line_hint ${line_hint} does not match the old_text location: old_text appears at line ${lineList(matches)} of ${shown}. ` +
          "Read the intended region again and copy old_text that covers the target line.",
      );
    }
    if (covering.length > 1) throw new ToolError(`line_hint ${line_hint} is ambiguous: old_text appears ${covering.length} times on that line of ${shown}; pass occurrence instead`);
    return covering;
  }
  if (matches.length > 1) {
    throw new ToolError(
      `old_text appears ${matches.length} times in ${shown} (at lines ${lineList(matches)}). ` +
        "Include more surrounding lines to make it unique, or pass line_hint (the line to edit), occurrence (1-based), or replace_all=true.",
    );
  }
  return matches;
}

/** Replaces the chosen matches, each fitted to the file's quotes and indentation. */
function apply(text: string, oldText: string, newText: string, chosen: Match[]): string {
  let updated = text;
  for (const m of [...chosen].reverse()) {
    const replacement = keepIndentation(oldText, m.text, keepQuoteStyle(oldText, m.text, newText));
    let end = m.end;
    // Deleting a whole line takes its newline with it, so no blank line is left behind.
    const wholeLine = (m.start === 0 || text[m.start - 1] === "\n") && text[end] === "\n";
    if (replacement === "" && !m.text.endsWith("\n") && wholeLine) end++;
    updated = updated.slice(0, m.start) + replacement + updated.slice(end);
  }
  return updated;
}

export function editFileTool(sandbox: Sandbox, reads?: FileReads) {
  async function create(full: string, shown: string, newText: string, ctx: ToolContext, existed: boolean) {
    await mkdir(dirname(full), { recursive: true });
    await writeFile(full, newText, "utf8");
    reads?.saw(ctx, full, newText);
    return `${existed ? "Filled the empty file" : "Created"} ${shown} (${Buffer.byteLength(newText)} bytes).`;
  }

  return defineTool({
    name: "edit_file",
    description:
      "Replace old_text with new_text in a file; copy old_text from read_file. If it is not found exactly, a match ignoring indentation, " +
      "then one ignoring curly vs straight quotes is tried (the file's indentation and quotes are kept). If old_text occurs several times, " +
      "give more context, line_hint (the numbered line to edit), occurrence, or replace_all; expected_replacements guards the count. " +
      'old_text "" creates the file.',
    parameters: params,
    async execute(args, ctx) {
      const { path, old_text, new_text, occurrence, line_hint, replace_all, expected_replacements } = args;
      if (replace_all && occurrence != null) throw new ToolError("occurrence cannot be used with replace_all=true: pass one of them");
      if (replace_all && line_hint != null) throw new ToolError("line_hint cannot be used with replace_all=true: pass one of them");
      if (occurrence != null && line_hint != null) throw new ToolError("line_hint cannot be used with occurrence: pass one of them");
      const full = resolveToolPath(sandbox, path, "write");
      const shown = displayPath(sandbox, full);
      const exists = await stat(full).then(
        () => true,
        (err: NodeJS.ErrnoException) => (err.code === "ENOENT" ? false : true),
      );
      if (!exists) {
        if (old_text === "") return create(full, shown, new_text, ctx, false);
        throw await missing(full, shown);
      }
      await assertReadableFile(full, shown);
      const bytes = await readFile(full);
      const original = bytes.toString("utf8");
      if (old_text === "") {
        if (original.trim() !== "") {
          throw new ToolError(`cannot create ${shown}: it already exists and is not empty. Pass the text to replace as old_text, or use write_file to overwrite it.`);
        }
        return create(full, shown, new_text, ctx, true);
      }
      if (old_text === new_text) throw new ToolError("new_text is the same as old_text: the edit would change nothing");
      const warning = reads?.check(ctx, full, bytes, shown);
      // Files with CRLF endings are matched and written back with CRLF; a file that mixes both keeps
      // its bytes (matched as they are), so an edit never rewrites every other line's ending.
      const crlf = original.includes("\r\n") && !/(^|[^\r])\n/.test(original);
      const text = crlf ? original.replace(/\r\n/g, "\n") : original;
      const oldText = old_text.replace(/\r\n/g, "\n");
      let newText = new_text.replace(/\r\n/g, "\n");
      if (!MARKDOWN.has(extname(full).toLowerCase())) newText = newText.replace(/[ \t]+$/gm, "");
      const matches = findMatches(text, oldText);
      if (matches.length === 0) throw notFound(text, oldText, shown);
      const chosen = choose(matches, shown, { occurrence, line_hint, replace_all });
      if (expected_replacements != null && chosen.length !== expected_replacements) {
        throw new ToolError(`expected ${expected_replacements} replacements but would make ${chosen.length} (old_text is at line ${lineList(matches)} of ${shown}); nothing was changed`);
      }
      const updated = apply(text, oldText, newText, chosen);
      const written = crlf ? updated.replace(/\n/g, "\r\n") : updated;
      await writeFile(full, written, "utf8");
      reads?.saw(ctx, full, written);
      const how = { exact: "", trimmed: " (matched ignoring indentation; the file's indentation was kept)", quotes: " (matched ignoring curly vs straight quotes; the file's quotes were kept)" }[chosen[0]!.how];
      const done = `Edited ${shown}: replaced ${chosen.length} occurrence(s) at line ${lineList(chosen)}${how}.`;
      return warning ? `${done}\n${warning}` : done;
    },
  });
}
