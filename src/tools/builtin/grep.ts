import { readFile, stat } from "node:fs/promises";
import { isBinaryFile } from "isbinaryfile";
import { z } from "zod";
import { lazySchema } from "../../lazy-schema.js";
import { defineTool, ToolError } from "../contract.js";
import { displayPath, isRefusedHardLink, resolveToolPath, type Sandbox } from "../sandbox.js";
import { anyDepth, limitOf, matchesType, paginate, paginationNote } from "./search-common.js";
import { findFiles } from "./walk.js";

/** Files larger than this are skipped in a directory search (and counted in a note). */
export const MAX_SEARCH_FILE_BYTES = 2_000_000;
/** A file named by path is searched up to this size. */
const MAX_EXPLICIT_FILE_BYTES = 50 * 1024 * 1024;
/** Content-mode output stops before this many characters. */
const MAX_RESULT_CHARS = 128_000;

const lines = (n: string) => z.number().int().min(0).max(20).optional().describe(n);
const params = lazySchema(() => z.object({
  pattern: z.string().min(1).describe("Regular expression (JavaScript syntax), or plain text with fixed_strings"),
  path: z.string().default(".").describe("File or directory to search (default '.')"),
  glob: z.string().optional().describe("Which files to search, e.g. '*.py' (any depth) or 'tests/**/test_*.py'"),
  type: z.string().optional().describe("File type shorthand, e.g. 'py', 'ts', 'md', 'json' (any other value is an extension)"),
  case_insensitive: z.boolean().default(false),
  fixed_strings: z.boolean().default(false).describe("Take pattern as plain text, not a regular expression"),
  output_mode: z
    .enum(["files_with_matches", "content", "count"])
    .default("files_with_matches")
    .describe("files_with_matches (default): paths only; content: matching lines with context; count: matches per file"),
  context_before: lines("Lines of context before each match (content mode)"),
  context_after: lines("Lines of context after each match (content mode)"),
  "-B": lines("Same as context_before"),
  "-A": lines("Same as context_after"),
  "-C": lines("Lines of context before and after each match"),
  context: lines("Same as -C"),
  head_limit: z.number().int().min(0).max(1_000).optional().describe("Most results: match blocks in content mode, files otherwise (default 250, 0 for all)"),
  offset: z.number().int().min(0).max(100_000).default(0).describe("Skip the first N results before head_limit"),
  max_matches: z.number().int().min(1).max(1_000).optional().describe("Legacy alias for head_limit in content mode"),
  max_results: z.number().int().min(1).max(1_000).optional().describe("Legacy alias for head_limit in the other modes"),
}));
type Args = z.infer<typeof params>;

type Searchable = { text: string; mtime: number } | "hard-link" | "large" | "binary" | undefined;

async function searchable(sandbox: Sandbox, path: string, maxBytes: number): Promise<Searchable> {
  const info = await stat(path).catch(() => undefined);
  if (!info?.isFile()) return undefined;
  if (isRefusedHardLink(sandbox, info)) return "hard-link";
  if (info.size > maxBytes) return "large";
  const buffer = await readFile(path).catch(() => undefined);
  if (!buffer || (await isBinaryFile(buffer, buffer.length))) return "binary";
  try {
    return { text: new TextDecoder("utf-8", { fatal: true }).decode(buffer), mtime: info.mtimeMs };
  } catch {
    return "binary";
  }
}

function compile(args: Args): RegExp {
  const source = args.fixed_strings ? args.pattern.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") : args.pattern;
  try {
    return new RegExp(source, args.case_insensitive ? "i" : "");
  } catch (err) {
    throw new ToolError(`invalid regular expression ${args.pattern}: ${(err as Error).message}. Pass fixed_strings: true to search for it as plain text.`);
  }
}

/** nanobot's block: the match's place, then its lines with `>` on the match. */
function block(shown: string, lines: string[], match: number, before: number, after: number): string {
  const out = [`${shown}:${match + 1}`];
  for (let i = Math.max(0, match - before); i <= Math.min(lines.length - 1, match + after); i++) {
    out.push(`${i === match ? ">" : " "} ${i + 1}| ${lines[i]}`);
  }
  return out.join("\n");
}

export function grepTool(sandbox: Sandbox) {
  return defineTool({
    name: "grep",
    description:
      "Search file contents with a regular expression (or plain text with fixed_strings). output_mode: files_with_matches (default, newest first), " +
      "content (matching lines with -A/-B/-C context), count. Filter with glob or type; page with head_limit and offset. Binary and large files are skipped.",
    parameters: params,
    readOnly: true,
    async execute(args) {
      const regex = compile(args);
      const root = resolveToolPath(sandbox, args.path, "read");
      const info = await stat(root).catch(() => undefined);
      if (!info) throw new ToolError(`not found: ${args.path}`);
      const explicit = !info.isDirectory();
      const files = explicit ? [root] : (await findFiles(sandbox, root, anyDepth(args.glob ?? "**/*"))).sort();
      const before = args.context_before ?? args["-B"] ?? args["-C"] ?? args.context ?? 0;
      const after = args.context_after ?? args["-A"] ?? args["-C"] ?? args.context ?? 0;
      const content = args.output_mode === "content";
      const limit = limitOf(args.head_limit, content ? args.max_matches : args.max_results);
      const skipped = { binary: 0, large: 0, hardLinks: 0 };
      const matched: Array<{ shown: string; count: number; mtime: number }> = [];
      const blocks: string[] = [];
      let chars = 0;
      let seen = 0;
      let truncated = false;
      let sizeCut = false;
      for (const file of files) {
        if (!explicit && !matchesType(file, args.type)) continue;
        const found = await searchable(sandbox, file, explicit ? MAX_EXPLICIT_FILE_BYTES : MAX_SEARCH_FILE_BYTES);
        if (found === "hard-link") skipped.hardLinks++;
        else if (found === "large") skipped.large++;
        else if (found === "binary") skipped.binary++;
        if (typeof found !== "object") continue;
        const text = found.text.replace(/\r\n/g, "\n").split("\n");
        if (text.at(-1) === "") text.pop();
        const shown = displayPath(sandbox, file);
        let count = 0;
        for (let i = 0; i < text.length; i++) {
          if (!regex.test(text[i]!)) continue;
          count++;
          if (!content) {
            if (args.output_mode === "files_with_matches") break;
            continue;
          }
          if (++seen <= args.offset) continue;
          if (limit !== undefined && blocks.length >= limit) {
            truncated = true;
            break;
          }
          const b = block(shown, text, i, before, after);
          if (chars + b.length + 2 > MAX_RESULT_CHARS) {
            sizeCut = true;
            break;
          }
          blocks.push(b);
          chars += b.length + 2;
        }
        if (count) matched.push({ shown, count, mtime: found.mtime });
        if (truncated || sizeCut) break;
      }
      const notes: string[] = [];
      let body: string;
      if (content) {
        body = blocks.join("\n\n");
        if (truncated) notes.push(`(pagination: limit=${limit}, offset=${args.offset})`);
        else if (sizeCut) notes.push("(output truncated due to size; narrow the search or page with offset)");
        else if (args.offset > 0 && blocks.length) notes.push(`(pagination: offset=${args.offset})`);
      } else {
        matched.sort((a, b) => b.mtime - a.mtime || a.shown.localeCompare(b.shown));
        const { page, truncated: more } = paginate(matched, limit, args.offset);
        body = page.map((m) => (args.output_mode === "count" ? `${m.shown}: ${m.count}` : m.shown)).join("\n");
        const note = paginationNote(limit, args.offset, more);
        if (note) notes.push(note);
      }
      if (skipped.binary) notes.push(`(skipped ${skipped.binary} binary/unreadable files)`);
      if (skipped.large) notes.push(`(skipped ${skipped.large} large files over ${MAX_SEARCH_FILE_BYTES} bytes; search one by its path to include it)`);
      if (args.output_mode === "count" && matched.length) {
        notes.push(`(total matches: ${matched.reduce((n, m) => n + m.count, 0)} in ${matched.length} files)`);
      }
      if (skipped.hardLinks) {
        notes.push(`(${skipped.hardLinks} hard-linked file(s) skipped: tools.restrictToWorkspace is on and tools.allowHardLinks is off)`);
      }
      if (!body) {
        const none = matched.length ? `No more matches past offset ${args.offset}` : `No matches found for pattern '${args.pattern}' in ${args.path}`;
        return [none, ...notes].join("\n");
      }
      return notes.length ? `${body}\n\n${notes.join("\n")}` : body;
    },
  });
}
