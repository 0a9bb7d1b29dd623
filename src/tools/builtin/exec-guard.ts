import { isIP } from "node:net";
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { resolve } from "node:path";
import { isInside, realpathLoose } from "../sandbox.js";
import { SsrfError, type SsrfGuard } from "../ssrf.js";
import { commandPaths, commandSegments } from "./shell-parse.js";

/** A path into the workspace's hooks/ folder (`hooks/x.mjs`, `./hooks/`, `/ws/hooks/…`). */
const HOOKS = String.raw`(?<=^|[\s/'"=>])hooks/`;

/** Commands refused whatever the configuration says (tools.exec.denyPatterns adds to these). */
export const DEFAULT_DENY_PATTERNS = [
  String.raw`\brm\s+(-[a-z]*\s+)*-[a-z]*r[a-z]*\b`, // rm -r, -rf, -fr, -Rf
  String.raw`\brm\s+.*--recursive\b`,
  String.raw`\bdel\s+/[fqs]\b`,
  String.raw`\brmdir\s+/s\b`,
  // The Windows disk command, not a `&format=` in a URL's query.
  String.raw`(?:^|[;&|]\s*)format(?!=)\b`,
  String.raw`\b(mkfs|diskpart|wipefs)\b`,
  String.raw`\bdd\b.*\bif=`,
  String.raw`>\s*/dev/(sd|hd|vd|nvme|xvd)`,
  String.raw`\b(shutdown|reboot|poweroff|halt)\b`,
  String.raw`\binit\s+[06]\b`,
  String.raw`:\(\)\s*\{.*\};\s*:`, // fork bomb
  // The memory files Dream owns are written by troupe only, and the workspace's hooks/ (modules troupe
  // runs outside the sandbox) by a person only: a second line where no bwrap mounts hooks/ read-only.
  String.raw`>>?\s*\S*(history\.jsonl|\.dream_cursor|memory/\.cursor|${HOOKS})`,
  String.raw`\btee\b[^|;&<>]*(history\.jsonl|\.dream_cursor|memory/\.cursor|${HOOKS})`,
  String.raw`\b(cp|mv|ln|install)\b[^|;&<>]*\s\S*(history\.jsonl|\.dream_cursor|memory/\.cursor|${HOOKS}\S*)\s*($|[|;&])`,
  String.raw`\bdd\b[^|;&<>]*\bof=\S*(history\.jsonl|\.dream_cursor|memory/\.cursor|${HOOKS})`,
  String.raw`\bsed\s+(-[a-z]*\s+)*-i[^|;&<>]*(history\.jsonl|\.dream_cursor|memory/\.cursor|${HOOKS})`,
];

/** Paths every command may name: the harmless device files. */
const ALWAYS_ALLOWED = ["/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/urandom", "/dev/random", "/dev/zero", "/dev/full"];
const isDevice = (p: string) => ALWAYS_ALLOWED.includes(p) || p.startsWith("/dev/fd/");

export interface ExecPolicy {
  deny: RegExp[];
  /** Whole-command patterns (compileAllowPatterns): every command of a line must match one. */
  allow: RegExp[];
  restrict: boolean;
  /** Directories a restricted command may name besides its working directory (the workspace, media). */
  roots: string[];
  /** Of those, ones a command may read and run from but not redirect output into (the built-in skills). */
  readOnlyRoots?: string[];
  /** Where user homes are looked up for `~name` (tests point it at their own file). */
  passwdFile?: string;
}

export function compilePatterns(patterns: string[]): RegExp[] {
  return patterns.map((p) => new RegExp(p, "i"));
}

/** Allow patterns match a whole command (nanobot's fullmatch), case-insensitively. */
export function compileAllowPatterns(patterns: string[]): RegExp[] {
  return patterns.map((p) => new RegExp(`^(?:${p})$`, "i"));
}

/** Absolute, `~` and `file://` paths a command names (URLs and `host:/path` are not paths). */
export function pathsIn(command: string): string[] {
  return commandPaths(command);
}

/** The home directory of user `name` from the passwd file, if there is one. */
function homeOf(name: string, passwdFile = "/etc/passwd"): string | undefined {
  try {
    for (const line of readFileSync(passwdFile, "utf8").split("\n")) {
      const fields = line.split(":");
      if (fields[0] === name && fields[5]) return fields[5];
    }
  } catch {
    // No passwd file: the user is unknown.
  }
  return undefined;
}

const OUTSIDE_HINT = "(tools.restrictToWorkspace is on); use relative paths inside it. This is a policy boundary, not a transient failure: do not retry with shell tricks";

/** Where a `~` form points, or a refusal for the shell's directory-stack forms, which can point anywhere. */
function expandTilde(raw: string, cwd: string, passwdFile?: string): string | { refusal: string } {
  const m = /^~([^/]*)(\/.*)?$/.exec(raw);
  if (!m) return raw;
  const [, who = "", rest = ""] = m;
  if (who === "") return homedir() + rest;
  if (who === "+") return cwd + rest;
  if (/^(?:-|[+-]\d+)$/.test(who)) {
    return { refusal: `command refused: ${raw} names a directory from the shell's directory stack, which can be outside the workspace ${OUTSIDE_HINT}` };
  }
  const home = homeOf(who, passwdFile);
  if (!home) return { refusal: `command refused: ${raw} names the home of user ${who}, which troupe cannot place inside the workspace ${OUTSIDE_HINT}` };
  return home + rest;
}

/** The paths a command redirects output into (`> path`, `>> path`, `2> path`). */
function redirectTargets(command: string): string[] {
  return [...command.matchAll(/\d?>>?\|?\s*((?:\/|~\/)[^\s"'>;|<)]*)/g)].map((m) => m[1]!);
}

/** Why a command is refused by its patterns and paths, or undefined when it may run. */
export function refusalOf(command: string, cwd: string, policy: ExecPolicy): string | undefined {
  const cmd = command.trim();
  // nanobot's rule: a line whose every command matches an allow pattern skips the deny list (the way to
  // permit one specific command it would refuse); with allow patterns, any other line is refused.
  const segments = commandSegments(cmd);
  const unmatched = segments.find((s) => !policy.allow.some((re) => re.test(s)));
  const allowed = policy.allow.length > 0 && segments.length > 0 && unmatched === undefined;
  if (!allowed) {
    const denied = policy.deny.find((re) => re.test(cmd));
    if (denied) return `command refused by the safety guard: it matches the deny pattern /${denied.source}/`;
    if (policy.allow.length) {
      return `command refused by the safety guard: \`${unmatched ?? cmd}\` matches none of tools.exec.allowPatterns (each command of a line, joined by && || ; | & or inside $(…), must match one)`;
    }
  }
  if (!policy.restrict) return undefined;
  if (/(?:^|[\s/'"=])\.\.(?:$|[\s/\\'";&|)])/.test(cmd)) {
    return "command refused: `..` would leave the workspace (tools.restrictToWorkspace is on); use paths inside it";
  }
  const roots = [cwd, ...policy.roots].map((r) => realpathLoose(resolve(r)));
  const readOnly = (policy.readOnlyRoots ?? []).map((r) => realpathLoose(resolve(r)));
  const written = new Set(redirectTargets(cmd));
  for (const raw of pathsIn(cmd)) {
    const expanded = expandTilde(raw, cwd, policy.passwdFile);
    if (typeof expanded !== "string") return expanded.refusal;
    const path = resolve(cwd, expanded);
    if (isDevice(expanded) || isDevice(path)) continue;
    const real = realpathLoose(path);
    if (!roots.some((root) => isInside(real, root))) {
      return `command refused: ${raw} is outside the workspace ${OUTSIDE_HINT}`;
    }
    if (written.has(raw) && readOnly.some((root) => isInside(real, root)) && !isInside(real, realpathLoose(resolve(cwd)))) {
      return `command refused: ${raw} is read-only (the built-in skills); copy what you need into the workspace and change it there`;
    }
  }
  return undefined;
}

/** URLs a command names: any scheme but file (a path, checked above), and bare `address:port` or `address/path`. */
export function urlsIn(command: string): URL[] {
  const found: URL[] = [];
  const add = (text: string) => {
    try {
      found.push(new URL(text));
    } catch {
      // Not a URL after all.
    }
  };
  for (const m of command.matchAll(/\b([a-z][a-z0-9+.-]*):\/\/[^\s"'`;|<>()]+/gi)) if (m[1]!.toLowerCase() !== "file") add(m[0]);
  // curl, wget and nc take a host without a scheme: an IP literal or localhost with a port or a path.
  const bare = /(?:^|[\s"'=@(])((?:\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-f:.]+\]|localhost)(?::\d+)?(?:\/[^\s"'`;|<>()]*)?)(?=$|[\s"'`;|<>()])/gi;
  for (const m of command.matchAll(bare)) {
    if (/[:/]/.test(m[1]!.replace(/^\[[^\]]*\]/, ""))) add(`http://${m[1]}`);
  }
  // A network client's arguments: any that reads as an address literal in any form a URL parser
  // takes (127.1, 0x7f000001, 2130706433, with or without a port) or localhost, port or no port.
  for (const m of command.matchAll(NETWORK_CLIENT_ARGS)) {
    for (const word of m[1]!.split(/\s+/)) {
      const arg = word.replace(/^["']|["']$/g, "");
      if (!arg || arg.startsWith("-") || arg.includes("://")) continue;
      // A plain number is an option's value or a port (-m 5, --retry 3, nc host 443), which a URL
      // parser would read as 0.0.0.5; one of 2^24 or more is a whole IPv4 address (2130706433 is 127.0.0.1).
      if (/^\d+$/.test(arg) && Number(arg) < 2 ** 24) continue;
      try {
        const url = new URL(`http://${arg}`);
        const host = url.hostname.replace(/^\[|\]$/g, "");
        if (isIP(host) || host === "localhost") found.push(url);
      } catch {
        // Not an address.
      }
    }
  }
  return found;
}

/** curl, wget, nc and the like with their arguments, up to the end of the command. */
const NETWORK_CLIENT_ARGS = /(?:^|[\s;&|(`])(?:curl|wget|nc|ncat|netcat|telnet|http|https|xh|socat)\s+([^;&|<>()`\n]*)/g;

/** Schemes whose host is a DNS name: one that cannot be looked up is refused (nanobot scans http and https). */
const NAMED_HOST_SCHEMES = new Set(["http:", "https:", "ws:", "wss:", "ftp:"]);

/** Refuses a command naming an internal address, by the rules web_fetch follows (tools.ssrfWhitelist included). */
export async function internalUrlRefusal(command: string, guard: SsrfGuard, timeoutMs = 3_000): Promise<string | undefined> {
  for (const url of urlsIn(command)) {
    const host = url.hostname.replace(/^\[|\]$/g, "").replace(/\.$/, "").toLowerCase();
    if (host === "localhost" || host.endsWith(".localhost")) {
      // Loopback by definition (RFC 6761), whatever a resolver says: allowed only by tools.ssrfWhitelist.
      const why = guard.blocked("127.0.0.1");
      if (why) return refusedUrl(url.host, why);
      continue;
    }
    let timer: NodeJS.Timeout | undefined;
    try {
      // Only the address matters here: a scheme web_fetch would not take is still checked by its host.
      const probe = new URL(`http://${url.host}/`);
      const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new LookupTimeout(timeoutMs)), timeoutMs)));
      await Promise.race([guard.assertPublicUrl(probe), late]);
    } catch (err) {
      if (err instanceof SsrfError) return `command refused by the safety guard (internal/private URL): ${err.message.replace(/^refused to fetch/, "it names").replace("can be fetched", "can be reached")}`;
      // A name the guard cannot look up now may answer with an internal address when the command
      // runs: refused, as nanobot refuses it ("Cannot resolve hostname"). s3://bucket,
      // gs://bucket, hf://datasets, postgres://app@db name no DNS host: those pass as before.
      if (!NAMED_HOST_SCHEMES.has(url.protocol)) continue;
      const why = err instanceof LookupTimeout ? err.message : (err as Error).message.replace(/^cannot resolve [^:]*: /, "");
      return `command refused by the safety guard (internal/private URL): it names ${url.host}, whose address could not be looked up (${why}), so it cannot be shown to be public; check the name, or retry if the network was slow.`;
    } finally {
      clearTimeout(timer);
    }
  }
  return undefined;
}

class LookupTimeout extends Error {
  constructor(ms: number) {
    super(`no answer in ${ms / 1000} s`);
  }
}

const refusedUrl = (host: string, why: string) =>
  `command refused by the safety guard (internal/private URL): it names ${host}: it is ${why}. Commands may reach only public addresses; add it to tools.ssrfWhitelist if this is deliberate.`;
