import { stat } from "node:fs/promises";
import { glob } from "tinyglobby";
import { ToolError } from "../contract.js";

/** Directories no search descends into. */
export const NOISE_DIRS = [".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache"];
const IGNORE = NOISE_DIRS.map((d) => `**/${d}/**`);

/** Files under `dir` matching `pattern`, as absolute paths. Symlinked directories are not followed. */
export async function findFiles(dir: string, pattern: string, opts: { directories?: boolean } = {}): Promise<string[]> {
  return glob(pattern, {
    cwd: dir,
    absolute: true,
    dot: true,
    ignore: IGNORE,
    onlyFiles: !opts.directories,
    followSymbolicLinks: false,
    expandDirectories: false,
  });
}

export async function assertDirectory(path: string, shown: string): Promise<void> {
  const info = await stat(path).catch(() => undefined);
  if (!info) throw new ToolError(`directory not found: ${shown}`);
  if (!info.isDirectory()) throw new ToolError(`${shown} is not a directory`);
}
