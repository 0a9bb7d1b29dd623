import { stat } from "node:fs/promises";
import { z } from "zod";
import { defineTool } from "../contract.js";
import { displayPath, resolveToolPath, type Sandbox } from "../sandbox.js";
import { assertDirectory, findFiles } from "./walk.js";

export function globTool(sandbox: Sandbox) {
  return defineTool({
    name: "glob",
    description: "Find files by glob pattern (e.g. `**/*.ts`, `src/**/test_*.py`), newest first. Skips .git, node_modules and the like.",
    parameters: z.object({
      pattern: z.string().min(1),
      path: z.string().default(".").describe("Directory to search from"),
      limit: z.number().int().min(1).max(2_000).default(200),
    }),
    readOnly: true,
    async execute({ pattern, path, limit }) {
      const dir = resolveToolPath(sandbox, path, "read");
      await assertDirectory(dir, displayPath(sandbox, dir));
      const files = await findFiles(sandbox, dir, pattern);
      if (files.length === 0) return `No files match ${pattern} under ${displayPath(sandbox, dir)}`;
      const dated = await Promise.all(files.map(async (f) => ({ f, mtime: (await stat(f).catch(() => undefined))?.mtimeMs ?? 0 })));
      dated.sort((a, b) => b.mtime - a.mtime || a.f.localeCompare(b.f));
      const shown = dated.slice(0, limit).map(({ f }) => displayPath(sandbox, f));
      const more = files.length > limit ? `\n… ${files.length - limit} more (narrow the pattern or raise limit)` : "";
      return shown.join("\n") + more;
    },
  });
}
