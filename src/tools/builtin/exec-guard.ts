import { resolve } from "node:path";
import { expandHome } from "../../paths.js";
import { isInside, realpathLoose } from "../sandbox.js";

/** Commands refused whatever the configuration says (tools.exec.denyPatterns adds to these). */
export const DEFAULT_DENY_PATTERNS = [
  String.raw`\brm\s+(-[a-z]*\s+)*-[a-z]*r[a-z]*\b`, // rm -r, -rf, -fr, -Rf
  String.raw`\brm\s+.*--recursive\b`,
  String.raw`\bdel\s+/[fqs]\b`,
  String.raw`\brmdir\s+/s\b`,
  String.raw`(?:^|[;&|]\s*)format\b`,
  String.raw`\b(mkfs|diskpart|wipefs)\b`,
  String.raw`\bdd\b.*\bif=`,
  String.raw`>\s*/dev/(sd|hd|vd|nvme|xvd)`,
  String.raw`\b(shutdown|reboot|poweroff|halt)\b`,
  String.raw`\binit\s+[06]\b`,
  String.raw`:\(\)\s*\{.*\};\s*:`, // fork bomb
  // The memory files Dream owns are written by troupe only.
  String.raw`>>?\s*\S*(history\.jsonl|\.dream_cursor|memory/\.cursor)`,
  String.raw`\btee\b[^|;&<>]*(history\.jsonl|\.dream_cursor|memory/\.cursor)`,
  String.raw`\b(cp|mv|ln)\b[^|;&<>]*\s\S*(history\.jsonl|\.dream_cursor|memory/\.cursor)\s*($|[|;&])`,
  String.raw`\bsed\s+(-[a-z]*\s+)*-i[^|;&<>]*(history\.jsonl|\.dream_cursor|memory/\.cursor)`,
];

/** Paths every command may name: the harmless device files. */
const ALWAYS_ALLOWED = ["/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/urandom", "/dev/random", "/dev/zero"];

export interface ExecPolicy {
  deny: RegExp[];
  allow: RegExp[];
  restrict: boolean;
  /** Directories a restricted command may name besides its working directory (the workspace, media). */
  roots: string[];
  /** Of those, ones a command may read and run from but not redirect output into (the built-in skills). */
  readOnlyRoots?: string[];
}

export function compilePatterns(patterns: string[]): RegExp[] {
  return patterns.map((p) => new RegExp(p, "i"));
}

/** Absolute and `~` paths a command names (URLs are not paths: `//` after a colon is skipped). */
export function pathsIn(command: string): string[] {
  const found: string[] = [];
  for (const m of command.matchAll(/(?:^|[\s|>'"=(])((?:\/|~\/|~(?=$|[\s"'>;|<)]))[^\s"'>;|<)]*)/g)) found.push(m[1]!);
  return found;
}

/** The paths a command redirects output into (`> path`, `>> path`, `2> path`). */
function redirectTargets(command: string): string[] {
  return [...command.matchAll(/\d?>>?\|?\s*((?:\/|~\/)[^\s"'>;|<)]*)/g)].map((m) => m[1]!);
}

/** Why a command is refused, or undefined when it may run. */
export function refusalOf(command: string, cwd: string, policy: ExecPolicy): string | undefined {
  const cmd = command.trim();
  const denied = policy.deny.find((re) => re.test(cmd));
  if (denied) return `command refused by the safety guard: it matches the deny pattern /${denied.source}/`;
  if (policy.allow.length && !policy.allow.some((re) => re.test(cmd))) {
    return "command refused by the safety guard: it matches none of tools.exec.allowPatterns";
  }
  if (!policy.restrict) return undefined;
  if (/(?:^|[\s/'"=])\.\.(?:$|[\s/\\'";&|)])/.test(cmd)) {
    return "command refused: `..` would leave the workspace (tools.restrictToWorkspace is on); use paths inside it";
  }
  const roots = [cwd, ...policy.roots].map((r) => realpathLoose(resolve(r)));
  const readOnly = (policy.readOnlyRoots ?? []).map((r) => realpathLoose(resolve(r)));
  const written = new Set(redirectTargets(cmd));
  for (const raw of pathsIn(cmd)) {
    const path = resolve(expandHome(raw));
    if (ALWAYS_ALLOWED.includes(path)) continue;
    const real = realpathLoose(path);
    if (!roots.some((root) => isInside(real, root))) {
      return `command refused: ${raw} is outside the workspace (tools.restrictToWorkspace is on); use relative paths inside it`;
    }
    if (written.has(raw) && readOnly.some((root) => isInside(real, root)) && !isInside(real, realpathLoose(resolve(cwd)))) {
      return `command refused: ${raw} is read-only (the built-in skills); copy what you need into the workspace and change it there`;
    }
  }
  return undefined;
}
