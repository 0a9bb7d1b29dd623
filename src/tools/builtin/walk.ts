import { stat } from "node:fs/promises";
import { ToolError } from "../contract.js";
import { assertPatternInside, keepReachable, type Sandbox } from "../sandbox.js";

/** Directories no search descends into. */
export const NOISE_DIRS = [".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache"];
const IGNORE = NOISE_DIRS.map((d) => `**/${d}/**`);

/**
 * Files under `dir` matching `pattern`, as absolute paths. Symlinked directories are not followed,
 * but a pattern can still name a path through one (`mid/*`): when restricted, a pattern that leaves
 * `dir` is refused and every result is kept only if its real path is inside the readable roots.
 */
export async function findFiles(
  sandbox: Sandbox,
  dir: string,
  pattern: string,
  opts: { directories?: boolean; onlyDirectories?: boolean } = {},
): Promise<string[]> {
  assertPatternInside(sandbox, pattern);
  // tinyglobby (with fdir and picomatch) loads at the first search, not with every turn.
  const { glob } = await import("tinyglobby");
  const found = await glob(pattern, {
    cwd: dir,
    absolute: true,
    dot: true,
    ignore: IGNORE,
    onlyFiles: !opts.directories && !opts.onlyDirectories,
    onlyDirectories: opts.onlyDirectories,
    followSymbolicLinks: false,
    expandDirectories: false,
  });
  return keepReachable(sandbox, found, "read");
}

/**
 * The ToolError a directory read failed with when the path is missing or not a directory (what
 * assertDirectory says before a read), else the error itself: a reader that handles these needs no
 * stat of its own first (one thread-pool round trip less).
 */
export function directoryError(err: unknown, shown: string): unknown {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "ENOTDIR") return new ToolError(`${shown} is not a directory`);
  if (code === "ENOENT" || code === "ELOOP" || code === "ENAMETOOLONG") return new ToolError(`directory not found: ${shown}`);
  return err;
}

export async function assertDirectory(path: string, shown: string): Promise<void> {
  const info = await stat(path).catch(() => undefined);
  if (!info) throw new ToolError(`directory not found: ${shown}`);
  if (!info.isDirectory()) throw new ToolError(`${shown} is not a directory`);
}
