import { readdirSync, statSync, type Dirent, type Stats } from "node:fs";
import { readdir } from "node:fs/promises";
import { relative } from "node:path";
import { z } from "zod";
import { lazySchema } from "../../lazy-schema.js";
import { defineTool } from "../contract.js";
import { displayPath, resolveToolTarget, type Sandbox, type ToolTarget } from "../sandbox.js";
import { assertDirectory, directoryError, findFiles, NOISE_DIRS } from "./walk.js";

/**
 * A directory whose size (st_size) is at most this is read synchronously: a few µs, where the thread
 * pool's round trip costs ~30 µs of CPU for the same two-entry read. A bigger one is read off the
 * event loop. What st_size counts differs by filesystem, so the bound is one ext4 block: ~100–300
 * entries on ext4, tmpfs, XFS and btrfs, and at most ~4,000 on ZFS, whose st_size is the entry count
 * (a read of ~1 ms). A threshold of 64 KB let ZFS read ~65,000 entries on the event loop.
 */
export const SYNC_READDIR_MAX_BYTES = 4 * 1024;

/**
 * The directory's entries; a missing path or a file is told by the read itself (directoryError).
 * The sandbox's stat of it, when it took one, chooses the read; else the directory is stat'ed here.
 */
async function readEntries({ path: dir, looked, info: known }: ToolTarget, shown: string): Promise<Dirent[]> {
  let info: Stats | undefined = known;
  if (!looked) {
    try {
      info = statSync(dir, { throwIfNoEntry: false });
    } catch {
      // A path through a file, no permission: the read below says which.
    }
  }
  try {
    if (info?.isDirectory() && info.size <= SYNC_READDIR_MAX_BYTES) return readdirSync(dir, { withFileTypes: true });
    return await readdir(dir, { withFileTypes: true });
  } catch (err) {
    throw directoryError(err, shown);
  }
}

export function listDirTool(sandbox: Sandbox) {
  return defineTool({
    name: "list_dir",
    description: "List a directory: sub-directories end with '/'. recursive lists the whole tree (skipping .git, node_modules and the like).",
    parameters: lazySchema(() => z.object({
      path: z.string().default(".").describe("Directory, relative to the workspace or absolute"),
      recursive: z.boolean().default(false),
      max_entries: z.number().int().min(1).max(2_000).default(200),
    })),
    readOnly: true,
    async execute({ path, recursive, max_entries }) {
      const target = resolveToolTarget(sandbox, path, "read");
      const dir = target.path;
      const shown = displayPath(sandbox, dir);
      let entries: string[];
      if (recursive) {
        await assertDirectory(dir, shown);
        const found = await findFiles(sandbox, dir, "**/*", { directories: true });
        entries = found.map((p) => relative(dir, p) + (p.endsWith("/") ? "/" : "")).sort();
      } else {
        entries = (await readEntries(target, shown))
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
