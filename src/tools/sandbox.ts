import { readlinkSync, realpathSync, statSync, type Stats } from "node:fs";
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
  /**
   * Directories inside the workspace the tools may read but not write when restricted: the
   * workspace's hooks/, whose modules troupe runs with its own rights, outside any sandbox.
   */
  readOnlyInside?: string[];
  /**
   * tools.allowHardLinks. A hard link is a second name for a file, wherever the first one is: when
   * restricted, a regular file with more than one name is refused unless this is on.
   */
  allowHardLinks: boolean;
}

/** As many symlinks as Linux follows in one lookup; past this a chain is a loop. */
const MAX_SYMLINKS = 40;

const readlinkOrUndefined = (path: string): string | undefined => {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
};

/**
 * realpath of the longest existing prefix, with the rest appended: a path that will exist later
 * resolves too. A dangling symlink is followed to what it names (a write through it lands there).
 */
export function realpathLoose(path: string, hops = 0): string {
  let current = path;
  const rest: string[] = [];
  for (;;) {
    try {
      // The system's realpath(3): one call, where the JavaScript one lstats every component of the path.
      return join(realpathSync.native(current), ...rest.reverse());
    } catch {
      const target = readlinkOrUndefined(current);
      if (target !== undefined) {
        if (hops >= MAX_SYMLINKS) throw new ToolError(`too many levels of symbolic links at ${current} (a symlink loop?)`);
        return realpathLoose(join(resolve(dirname(current), target), ...rest.reverse()), hops + 1);
      }
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
 * How long a root's real path (the workspace's, a readable root's) is taken as known: a tool call
 * resolved the same workspace again on every call (a realpath(3) each), which changes only when
 * someone moves the workspace or repoints a symlink above it, outside any tool's reach. Until the
 * next look a path in the root's new place is refused, never one outside its old place allowed.
 */
export const ROOT_RECHECK_MS = 1_000;
const realRoots = new Map<string, { real: string; at: number }>();

/** The real path of a root, looked up at most once per ROOT_RECHECK_MS. */
function realRoot(root: string): string {
  const path = resolve(root);
  const now = Date.now();
  const known = realRoots.get(path);
  if (known && now - known.at < ROOT_RECHECK_MS && now >= known.at) return known.real;
  const real = realpathLoose(path);
  realRoots.delete(path);
  realRoots.set(path, { real, at: now });
  if (realRoots.size > 64) realRoots.delete(realRoots.keys().next().value!);
  return real;
}

/** The real paths a restricted tool may reach. */
function allowedRoots(sandbox: Sandbox, access: "read" | "write"): string[] {
  return rootsOf(sandbox, access).map(realRoot);
}

const rootsOf = (sandbox: Sandbox, access: "read" | "write") => [sandbox.workspace, ...(access === "read" ? sandbox.readableRoots : [])];

/** Whether a real path is inside one of the allowed roots; each root's real path is looked up only when the ones before it did not hold the path. */
const insideAllowed = (sandbox: Sandbox, real: string, access: "read" | "write") =>
  rootsOf(sandbox, access).some((root) => isInside(real, realRoot(root)));

const RESTRICTED = "tools.restrictToWorkspace is on, so tools only reach files inside the workspace";

/**
 * Refuses a regular file with several names (when restricted and hard links are not allowed).
 * Returns what stat(2) said of the path (undefined: nothing there), for a tool that needs it too.
 */
function assertSingleName(path: string, shown: string): Stats | undefined {
  let info: Stats | undefined;
  try {
    info = statSync(path, { throwIfNoEntry: false });
  } catch (err) {
    // A path through a file (`notes.txt/x`) names nothing: the tool says so itself.
    if ((err as NodeJS.ErrnoException).code === "ENOTDIR") return undefined;
    throw err;
  }
  if (!info?.isFile() || info.nlink <= 1) return info;
  throw new ToolError(
    `access denied: ${shown} is a hard link (${info.nlink} names for one file), and its other name may be outside the workspace. ` +
      `${RESTRICTED}, so files with more than one link are refused; set tools.allowHardLinks to true to allow them.`,
  );
}

/**
 * Resolves a path a tool was given: `~` is the user's home, relative paths are taken against the
 * workspace. When restricted, the real path (symlinks followed, dangling ones too) must be inside
 * the workspace, or for reads inside one of the readable roots, and a regular file must have one
 * name only (see allowHardLinks); an escape is refused with a ToolError.
 */
export function resolveToolPath(sandbox: Sandbox, input: string, access: "read" | "write"): string {
  return resolveToolTarget(sandbox, input, access).path;
}

/** A path resolveToolTarget let through, with the stat(2) it took of it (see ToolTarget.looked). */
export interface ToolTarget {
  path: string;
  /** Whether the sandbox stat'ed the path (restricted, hard links refused): then info is what it found. */
  looked: boolean;
  /** The path's stat (symlinks followed); undefined when nothing is there or looked is false. */
  info?: Stats;
}

/**
 * resolveToolPath, handing on the stat the hard-link check took: a tool that would stat the path
 * itself next (list_dir, to choose how to read it) uses this one instead of a second system call.
 */
export function resolveToolTarget(sandbox: Sandbox, input: string, access: "read" | "write"): ToolTarget {
  if (input.includes("\0")) throw new ToolError(`path contains a NUL byte: ${JSON.stringify(input)}`);
  const expanded = expandHome(input.trim() || ".");
  const path = isAbsolute(expanded) ? resolve(expanded) : resolve(sandbox.workspace, expanded);
  if (!sandbox.restrict) return { path, looked: false };
  const real = realpathLoose(path);
  if (!insideAllowed(sandbox, real, access)) {
    const via = real === path ? "" : ` (it resolves to ${real})`;
    throw new ToolError(`access denied: ${input} is outside the workspace ${sandbox.workspace}${via}. ${RESTRICTED}; use a path inside it.`);
  }
  if (access === "write") {
    const locked = (sandbox.readOnlyInside ?? []).map((d) => realpathLoose(resolve(d))).find((d) => isInside(real, d));
    if (locked) {
      throw new ToolError(
        `access denied: ${input} is in ${locked}, which holds hook modules troupe runs with its own rights, outside the sandbox; tools may read it but not write it. A person adds hooks there (or in agents.defaults.hooks).`,
      );
    }
  }
  if (sandbox.allowHardLinks) return { path, looked: false };
  return { path, looked: true, info: assertSingleName(path, input) };
}

/** The real path of a path that exists, else of what it will be (see realpathLoose); undefined for a symlink loop. */
function realOrUndefined(path: string): string | undefined {
  try {
    return realpathSync.native(path);
  } catch {
    try {
      return realpathLoose(path);
    } catch {
      return undefined;
    }
  }
}

/** Paths checked per turn of the event loop: sync calls skip the thread pool, batches keep the loop turning. */
const CHECK_BATCH = 256;

/** Keeps the paths a search found whose real path is inside the allowed roots (all of them when not restricted). */
export async function keepReachable(sandbox: Sandbox, paths: string[], access: "read" | "write"): Promise<string[]> {
  if (!sandbox.restrict) return paths;
  const roots = allowedRoots(sandbox, access);
  const kept: string[] = [];
  for (let i = 0; i < paths.length; i += CHECK_BATCH) {
    if (i > 0) await new Promise((resolve) => setImmediate(resolve));
    for (const path of paths.slice(i, i + CHECK_BATCH)) {
      const real = realOrUndefined(path);
      if (real !== undefined && roots.some((root) => isInside(real, root))) kept.push(path);
    }
  }
  return kept;
}

/** Whether a search must skip this file: it has several names and hard links are not allowed. */
export function isRefusedHardLink(sandbox: Sandbox, info: { isFile(): boolean; nlink: number }): boolean {
  return sandbox.restrict && !sandbox.allowHardLinks && info.isFile() && info.nlink > 1;
}

/**
 * Refuses a glob pattern that names files outside the directory searched: an absolute one, or one
 * climbing with `..` (also inside braces or extglobs). Results are checked by real path anyway;
 * this says why up front.
 */
export function assertPatternInside(sandbox: Sandbox, pattern: string): void {
  if (!sandbox.restrict) return;
  const why = isAbsolute(pattern.trim())
    ? "is absolute"
    : /(^|[^\w.-])\.\.(?=$|[^\w.-])/.test(pattern)
      ? "climbs out of the search directory with `..`"
      : undefined;
  if (!why) return;
  throw new ToolError(
    `glob pattern ${pattern} ${why}. ${RESTRICTED}; give a relative pattern (e.g. **/*.ts) and, to search elsewhere inside the workspace, the path parameter.`,
  );
}

/** A path shown to the model: relative to the workspace when inside it. */
export function displayPath(sandbox: Sandbox, path: string): string {
  const rel = relative(sandbox.workspace, path);
  return rel && !rel.startsWith("..") && !isAbsolute(rel) ? rel : path;
}
