import { homedir } from "node:os";

/**
 * Tool hints as nanobot shows them to a person waiting: `read foo.txt`, `grep "TODO|FIXME"`,
 * `$ npm test`, `github::create_issue("Bug")`; long paths folded to `…/parent/file`, consecutive
 * identical hints folded to `hint × 2`.
 */

export interface HintCall {
  name: string | null | undefined;
  arguments: unknown;
}

interface Format {
  keys: string[];
  template: string;
  kind?: "path" | "command";
}

const FORMATS: Record<string, Format> = {
  read_file: { keys: ["path", "file_path"], template: "read {}", kind: "path" },
  write_file: { keys: ["path", "file_path"], template: "write {}", kind: "path" },
  edit_file: { keys: ["path", "file_path"], template: "edit {}", kind: "path" },
  edit: { keys: ["file_path", "path"], template: "edit {}", kind: "path" },
  list_dir: { keys: ["path"], template: "ls {}", kind: "path" },
  glob: { keys: ["pattern", "path"], template: "find {}" },
  find_files: { keys: ["query", "glob", "path"], template: "find {}" },
  grep: { keys: ["pattern"], template: 'grep "{}"' },
  exec: { keys: ["command"], template: "$ {}", kind: "command" },
  web_search: { keys: ["query"], template: 'search "{}"' },
  web_fetch: { keys: ["url"], template: "fetch {}", kind: "path" },
  spawn: { keys: ["label", "task"], template: "spawn {}" },
};

const ELLIPSIS = "\u2026";

/** Cut to `max` characters with a trailing ellipsis. */
const cut = (text: string, max: number) => `${text.slice(0, Math.max(0, max - 1))}${ELLIPSIS}`;

/**
 * A path or URL shortened to `max` characters, keeping the file name and as many parent
 * directories as fit: `/home/me/src/app/agent/loop.py` → `…/app/agent/loop.py`; the home
 * directory becomes `~`.
 */
export function abbreviatePath(path: string, max = 40, home = homedir()): string {
  if (!path) return path;
  if (/^https?:\/\//.test(path)) return abbreviateUrl(path, max);
  let p = path.replace(/\\/g, "/");
  const h = home.replace(/\\/g, "/");
  if (h && h !== "/" && p.startsWith(`${h}/`)) p = `~${p.slice(h.length)}`;
  else if (h && p === h) p = "~";
  if (p.length <= max) return p;
  const parts = p.replace(/\/+$/, "").split("/");
  if (parts.length <= 1) return cut(p, max);
  const base = parts[parts.length - 1]!;
  let budget = max - base.length - 3;
  const kept: string[] = [];
  for (const seg of parts.slice(0, -1).reverse()) {
    if (seg.length + 1 > budget) break;
    kept.unshift(seg);
    budget -= seg.length + 1;
  }
  return kept.length ? `${ELLIPSIS}/${kept.join("/")}/${base}` : `${ELLIPSIS}/${base}`;
}

function abbreviateUrl(url: string, max: number): string {
  if (url.length <= max) return url;
  let host: string;
  let pathname: string;
  try {
    ({ host, pathname } = new URL(url));
  } catch {
    return cut(url, max);
  }
  const segments = pathname.replace(/\/+$/, "").split("/");
  const base = segments[segments.length - 1] ?? "";
  if (!base) return cut(url, max);
  let budget = max - host.length - base.length - 4;
  if (budget < 0) {
    const room = max - host.length - 5;
    return `${host}/${ELLIPSIS}/${room > 0 ? base.slice(0, room) : ""}`;
  }
  const kept: string[] = [];
  for (const seg of segments.slice(0, -1).reverse()) {
    if (seg.length + 1 > budget) break;
    kept.unshift(seg);
    budget -= seg.length + 1;
  }
  return kept.length ? `${host}/${ELLIPSIS}/${kept.join("/")}/${base}` : `${host}/${ELLIPSIS}/${base}`;
}

// Paths inside a shell command: quoted (spaces allowed) or bare after a space; Unix, ~/ or Windows.
const PATH_IN_COMMAND =
  /"((?:[A-Za-z]:[/\\]|~\/|\/)[^"]+)"|'((?:[A-Za-z]:[/\\]|~\/|\/)[^']+)'|((?:[A-Za-z]:[/\\]|~\/|(?<=\s)\/)[^\s;&|<>"']+)/g;

/** A command with its paths folded, then cut to `max`. */
export function abbreviateCommand(command: string, max = 40, home = homedir()): string {
  const pathMax = Math.max(Math.floor(max / 2), 25);
  const folded = command.replace(PATH_IN_COMMAND, (_m, double?: string, single?: string, bare?: string) => {
    if (double !== undefined) return `"${abbreviatePath(double, pathMax, home)}"`;
    if (single !== undefined) return `'${abbreviatePath(single, pathMax, home)}'`;
    return abbreviatePath(bare ?? "", pathMax, home);
  });
  return folded.length <= max ? folded : cut(folded, max);
}

/** The arguments as an object: a JSON text is parsed, a list gives its first object, anything else none. */
function argsOf(args: unknown): Record<string, unknown> {
  let value = args;
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      return {};
    }
  }
  if (Array.isArray(value)) value = value[0];
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

const nonEmptyString = (v: unknown): v is string => typeof v === "string" && v !== "";

function formatKnown(name: string, args: Record<string, unknown>, format: Format, max: number, home: string): string {
  const value = format.keys.map((k) => args[k]).find(nonEmptyString) ?? Object.values(args).find(nonEmptyString);
  if (value === undefined) return name;
  const shown =
    format.kind === "path"
      ? abbreviatePath(value, max, home)
      : format.kind === "command"
        ? abbreviateCommand(value, max, home)
        : value.length > max
          ? cut(value, max)
          : value;
  return format.template.replace("{}", shown);
}

/** `mcp_<server>_<tool>` (troupe) or `mcp_<server>__<tool>` as `server::tool("first argument")`. */
function formatMcp(name: string, args: Record<string, unknown>, max: number, home: string): string {
  const rest = name.slice("mcp_".length);
  const [server, tool] = rest.includes("__") ? [rest.slice(0, rest.indexOf("__")), rest.slice(rest.indexOf("__") + 2)] : [rest.split("_")[0]!, rest.split("_").slice(1).join("_")];
  if (!tool) return name;
  const value = Object.values(args).find(nonEmptyString);
  return value === undefined ? `${server}::${tool}` : `${server}::${tool}("${abbreviatePath(value, max, home)}")`;
}

function formatOther(name: string, args: Record<string, unknown>, max: number, home: string): string {
  const value = Object.values(args)[0];
  if (typeof value !== "string") return name;
  return `${name}("${value.length > max ? abbreviatePath(value, max, home) : value}")`;
}

/** One call's hint. */
export function formatToolHint(call: HintCall, max = 40, home = homedir()): string {
  const name = call.name ?? "";
  const args = argsOf(call.arguments);
  const format = FORMATS[name];
  if (format) return formatKnown(name, args, format, max, home);
  if (name.startsWith("mcp_")) return formatMcp(name, args, max, home);
  return formatOther(name, args, max, home);
}

/** The hints of one model response's calls, comma-separated; a run of identical hints shows once with `× n`. */
export function formatToolHints(calls: HintCall[], max = 40, home = homedir()): string {
  const runs: Array<{ hint: string; count: number }> = [];
  for (const call of calls) {
    if (!call.name) continue; // a malformed call (no name) shows nothing rather than breaking the rest
    const hint = formatToolHint(call, max, home);
    const last = runs[runs.length - 1];
    if (last?.hint === hint) last.count++;
    else runs.push({ hint, count: 1 });
  }
  return runs.map(({ hint, count }) => (count > 1 ? `${hint} \u00d7 ${count}` : hint)).join(", ");
}
