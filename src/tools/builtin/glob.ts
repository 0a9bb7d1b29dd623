import { stat } from "node:fs/promises";
import { z } from "zod";
import { lazySchema } from "../../lazy-schema.js";
import { defineTool } from "../contract.js";
import { displayPath, resolveToolPath, type Sandbox } from "../sandbox.js";
import { anyDepth, limitOf, paginate, paginationNote } from "./search-common.js";
import { assertDirectory, findFiles } from "./walk.js";

const params = lazySchema(() => z.object({
  pattern: z.string().min(1).describe("Glob pattern, e.g. '*.py' (any depth) or 'tests/**/test_*.py'"),
  path: z.string().default(".").describe("Directory to search from (default '.')"),
  head_limit: z.number().int().min(0).max(1_000).optional().describe("Most paths to return (default 250, 0 for all)"),
  offset: z.number().int().min(0).max(100_000).default(0).describe("Skip the first N matching paths before head_limit"),
  entry_type: z.enum(["files", "dirs", "both"]).default("files").describe("Match files, directories, or both (default files)"),
  max_results: z.number().int().min(1).max(1_000).optional().describe("Legacy alias for head_limit"),
}));

export function globTool(sandbox: Sandbox) {
  return defineTool({
    name: "glob",
    description:
      "Find files (or directories, with entry_type) matching a glob pattern, newest first. A pattern without a slash matches names at any depth. " +
      "Skips .git, node_modules and the like. Page with head_limit and offset.",
    parameters: params,
    readOnly: true,
    async execute({ pattern, path, head_limit, offset, entry_type, max_results }) {
      const dir = resolveToolPath(sandbox, path, "read");
      await assertDirectory(dir, displayPath(sandbox, dir));
      const found = await findFiles(sandbox, dir, anyDepth(pattern), { directories: entry_type === "both", onlyDirectories: entry_type === "dirs" });
      if (found.length === 0) return `No files match ${pattern} under ${displayPath(sandbox, dir)}`;
      const dated = await Promise.all(
        found.map(async (f) => ({
          shown: f.endsWith("/") ? `${displayPath(sandbox, f.slice(0, -1))}/` : displayPath(sandbox, f),
          mtime: (await stat(f).catch(() => undefined))?.mtimeMs ?? 0,
        })),
      );
      dated.sort((a, b) => b.mtime - a.mtime || a.shown.localeCompare(b.shown));
      const limit = limitOf(head_limit, max_results);
      const { page, truncated } = paginate(dated, limit, offset);
      if (page.length === 0) return `No more matches: offset ${offset} is past the ${found.length} path(s) that match ${pattern}`;
      const note = paginationNote(limit, offset, truncated);
      return page.map((d) => d.shown).join("\n") + (note ? `\n\n${note}` : "");
    },
  });
}
