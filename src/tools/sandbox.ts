import { realpathSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { expandHome } from "../paths.js";
import { ToolError } from "./contract.js";

/** Where file tools may reach. */
export interface Sandbox {
  workspace: string;
  /** tools.restrictToWorkspace: every path must stay inside the workspace (after `~`, `..` and symlinks). */
  restrict: boolean;
  /** Directories that are readable (never writable) even when restricted: built-in skills, media. */
  readableRoots: string[];
}

/** realpath of the longest existing prefix, with the rest appended: a path that will exist later resolves too. */
export function realpathLoose(path: string): string {
  let current = path;
  const rest: string[] = [];
  for (;;) {
    try {
      return join(realpathSync(current), ...rest.reverse());
    } catch {
      const parent = dirname(current);
      if (parent === current) return path;
      rest.push(basename(current));
      current = parent;
    }
  }
}

export function isInside(path: string, root: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/**
 * Resolves a path a tool was given: `~` is the user's home, relative paths are taken against the
 * workspace. When restricted, the real path (symlinks followed) must be inside the workspace, or
 * for reads inside one of the readable roots; an escape is refused with a ToolError.
 */
export function resolveToolPath(sandbox: Sandbox, input: string, access: "read" | "write"): string {
  if (input.includes("\0")) throw new ToolError(`path contains a NUL byte: ${JSON.stringify(input)}`);
  const expanded = expandHome(input.trim() || ".");
  const path = isAbsolute(expanded) ? resolve(expanded) : resolve(sandbox.workspace, expanded);
  if (!sandbox.restrict) return path;
  const real = realpathLoose(path);
  const roots = [sandbox.workspace, ...(access === "read" ? sandbox.readableRoots : [])].map((r) => realpathLoose(resolve(r)));
  if (roots.some((root) => isInside(real, root))) return path;
  const via = real === path ? "" : ` (it resolves to ${real})`;
  throw new ToolError(
    `access denied: ${input} is outside the workspace ${sandbox.workspace}${via}. ` +
      "tools.restrictToWorkspace is on, so tools only reach files inside the workspace; use a path inside it.",
  );
}

/** A path shown to the model: relative to the workspace when inside it. */
export function displayPath(sandbox: Sandbox, path: string): string {
  const rel = relative(sandbox.workspace, path);
  return rel && !rel.startsWith("..") && !isAbsolute(rel) ? rel : path;
}
