import { readFile, stat } from "node:fs/promises";
import { isBinaryFile } from "isbinaryfile";
import { z } from "zod";
import { defineTool, ToolError } from "../contract.js";
import { displayPath, isRefusedHardLink, resolveToolPath, type Sandbox } from "../sandbox.js";
import { findFiles } from "./walk.js";

const MAX_FILE_BYTES = 5 * 1024 * 1024;

const params = z.object({
  pattern: z.string().min(1).describe("Regular expression (JavaScript syntax)"),
  path: z.string().default(".").describe("File or directory to search"),
  glob: z.string().default("**/*").describe("Which files to search under a directory, e.g. **/*.ts"),
  output_mode: z.enum(["files_with_matches", "content", "count"]).default("files_with_matches"),
  context: z.number().int().min(0).max(20).default(0).describe("Lines of context around each match (content mode)"),
  case_insensitive: z.boolean().default(false),
  head_limit: z.number().int().min(1).max(5_000).default(200).describe("Most lines or files to return"),
});

const HARD_LINK = Symbol("hard link");

/** Text of a file worth searching: HARD_LINK for one the sandbox refuses, undefined for binaries, huge files and unreadable ones. */
async function searchableText(sandbox: Sandbox, path: string): Promise<string | typeof HARD_LINK | undefined> {
  const info = await stat(path).catch(() => undefined);
  if (!info?.isFile() || info.size > MAX_FILE_BYTES) return undefined;
  if (isRefusedHardLink(sandbox, info)) return HARD_LINK;
  const buffer = await readFile(path).catch(() => undefined);
  if (!buffer || (await isBinaryFile(buffer, buffer.length))) return undefined;
  return buffer.toString("utf8");
}

function contentLines(lines: string[], hits: number[], context: number): string[] {
  const keep = new Set<number>();
  const hitSet = new Set(hits);
  for (const hit of hits) for (let i = Math.max(0, hit - context); i <= Math.min(lines.length - 1, hit + context); i++) keep.add(i);
  const out: string[] = [];
  let last = -2;
  for (const i of [...keep].sort((a, b) => a - b)) {
    if (context > 0 && last >= 0 && i > last + 1) out.push("--");
    out.push(`${i + 1}${hitSet.has(i) ? ":" : "-"} ${lines[i]}`);
    last = i;
  }
  return out;
}

export function grepTool(sandbox: Sandbox) {
  return defineTool({
    name: "grep",
    description:
      "Search file contents with a regular expression. output_mode: files_with_matches (default), content (matching lines, with context), count. Binary files are skipped.",
    parameters: params,
    readOnly: true,
    async execute(args) {
      let regex: RegExp;
      try {
        regex = new RegExp(args.pattern, args.case_insensitive ? "i" : "");
      } catch (err) {
        throw new ToolError(`invalid regular expression ${args.pattern}: ${(err as Error).message}`);
      }
      const root = resolveToolPath(sandbox, args.path, "read");
      const info = await stat(root).catch(() => undefined);
      if (!info) throw new ToolError(`not found: ${args.path}`);
      const files = info.isDirectory() ? (await findFiles(sandbox, root, args.glob)).sort() : [root];
      const out: string[] = [];
      let matchedFiles = 0;
      let hardLinks = 0;
      for (const file of files) {
        if (out.length > args.head_limit) break;
        const text = await searchableText(sandbox, file);
        if (text === HARD_LINK) hardLinks++;
        if (text === undefined || text === HARD_LINK) continue;
        const lines = text.split(/\r?\n/);
        if (lines.at(-1) === "") lines.pop();
        const hits = lines.flatMap((line, i) => (regex.test(line) ? [i] : []));
        if (hits.length === 0) continue;
        matchedFiles++;
        const shown = displayPath(sandbox, file);
        if (args.output_mode === "files_with_matches") out.push(shown);
        else if (args.output_mode === "count") out.push(`${shown}: ${hits.length}`);
        else out.push(...contentLines(lines, hits, args.context).map((l) => `${shown}:${l}`));
      }
      const skipped = hardLinks
        ? `\n(${hardLinks} hard-linked file(s) skipped: tools.restrictToWorkspace is on and tools.allowHardLinks is off)`
        : "";
      if (out.length === 0) return `No matches for /${args.pattern}/ in ${displayPath(sandbox, root)}${skipped}`;
      const truncated = out.length > args.head_limit ? `\n… output cut at ${args.head_limit} lines (raise head_limit or narrow the search)` : "";
      const summary = args.output_mode === "content" ? "" : `\n(${matchedFiles} file(s))`;
      return out.slice(0, args.head_limit).join("\n") + truncated + summary + skipped;
    },
  });
}
