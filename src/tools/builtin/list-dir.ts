import { readdir } from "node:fs/promises";
import { relative } from "node:path";
import { z } from "zod";
import { defineTool } from "../contract.js";
import { displayPath, resolveToolPath, type Sandbox } from "../sandbox.js";
import { assertDirectory, directoryError, findFiles, NOISE_DIRS } from "./walk.js";

export function listDirTool(sandbox: Sandbox) {
  return defineTool({
    name: "list_dir",
    description: "List a directory: sub-directories end with '/'. recursive lists the whole tree (skipping .git, node_modules and the like).",
    parameters: z.object({
      path: z.string().default(".").describe("Directory, relative to the workspace or absolute"),
      recursive: z.boolean().default(false),
      max_entries: z.number().int().min(1).max(2_000).default(200),
    }),
    readOnly: true,
    async execute({ path, recursive, max_entries }) {
      const dir = resolveToolPath(sandbox, path, "read");
      const shown = displayPath(sandbox, dir);
      let entries: string[];
      if (recursive) {
        await assertDirectory(dir, shown);
        const found = await findFiles(sandbox, dir, "**/*", { directories: true });
        entries = found.map((p) => relative(dir, p) + (p.endsWith("/") ? "/" : "")).sort();
      } else {
        // A missing path or a file is told by the read itself, without a stat first.
        const dirents = await readdir(dir, { withFileTypes: true }).catch((err: unknown) => {
          throw directoryError(err, shown);
        });
        entries = dirents
          .filter((d) => !NOISE_DIRS.includes(d.name))
          .sort((a, b) => Number(b.isDirectory()) - Number(a.isDirectory()) || a.name.localeCompare(b.name))
          .map((d) => (d.isDirectory() ? `${d.name}/` : d.name));
      }
      if (entries.length === 0) return `${shown} is empty`;
      const head = entries.slice(0, max_entries);
      const more = entries.length > max_entries ? `\n… and ${entries.length - max_entries} more (raise max_entries, or use glob)` : "";
      return head.join("\n") + more;
    },
  });
}
