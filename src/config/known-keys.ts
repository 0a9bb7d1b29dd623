import { closest, distance } from "fastest-levenshtein";
import { NANOBOT_KEYS, NANOBOT_LATEST } from "./nanobot-keys.js";
import { isPlainObject, snakeToCamel } from "./normalize.js";
import { unsupportedReason } from "./unsupported-reasons.js";

/**
 * What a config key troupe does not use is: a key nanobot has (troupe does not support it yet), one
 * nanobot itself retired, a third-party channel plugin's, or a key no nanobot release ever had (a
 * probable typo). Built on the key list generated from nanobot's schema at every release.
 */

export type KeyKind =
  | { kind: "nanobot"; first: string; last: string }
  | { kind: "retired"; last: string }
  | { kind: "plugin-channel"; name: string }
  | { kind: "typo"; suggestion?: string };

/** The key list's keys split into segments: made when a config first has a key or a null to look up (most have neither). */
let patterns: string[][] | undefined;
const allPatterns = () => (patterns ??= Object.keys(NANOBOT_KEYS).map((k) => k.split(".")));

/** A path as the key list spells it: camelCase segments, list indexes as `*`. */
const canonical = (path: string[]) => path.map((s) => (/^\d+$/.test(s) ? "*" : snakeToCamel(s)));

/** The NANOBOT_KEYS entry a path matches: its own key first, the pattern with fewest `*` otherwise. */
function matchKey(path: string[]): string | undefined {
  const segs = canonical(path);
  if (NANOBOT_KEYS[segs.join(".")]) return segs.join(".");
  let best: { key: string; stars: number } | undefined;
  for (const p of allPatterns()) {
    if (p.length !== segs.length || !p.every((s, i) => s === segs[i] || s === "*")) continue;
    const stars = p.filter((s) => s === "*").length;
    if (!best || stars < best.stars) best = { key: p.join("."), stars };
  }
  return best?.key;
}

/** The nanobot key a path names: a concrete key first, a `*` pattern (any name) otherwise. */
export function nanobotKey(path: string[]): [boolean, string, string, unknown?] | undefined {
  const key = matchKey(path);
  return key ? NANOBOT_KEYS[key] : undefined;
}

const isEmpty = (v: unknown) => v === null || v === "" || (Array.isArray(v) && v.length === 0) || (isPlainObject(v) && Object.keys(v).length === 0);

/**
 * Whether a value asks nanobot for nothing beyond what it does by default: empty, equal to
 * nanobot's default, switched off (enabled: false), or an object of such values. troupe
 * ignoring it changes nothing, so the startup line leaves it out (nanobot's onboard writes
 * every section at its defaults).
 */
export function isInert(path: string[], value: unknown): boolean {
  if (isEmpty(value)) return true;
  const entry = nanobotKey(path);
  if (entry && entry.length > 3 && JSON.stringify(entry[3]) === JSON.stringify(value)) return true;
  if (!isPlainObject(value)) return false;
  if (value.enabled === false || value.enable === false) return true;
  return Object.entries(value).every(([k, v]) => isInert([...path, k], v));
}

/** The raw value at a path whose segments may be camelCase where the file has snake_case. */
export function rawValueAt(raw: unknown, path: string[]): unknown {
  let node = raw;
  for (const seg of path) {
    if (!isPlainObject(node)) return undefined;
    const key = Object.hasOwn(node, seg) ? seg : Object.keys(node).find((k) => snakeToCamel(k) === seg);
    node = key === undefined ? undefined : node[key];
  }
  return node;
}

/** Whether nanobot takes null at this path (its field is optional in some release). */
export const nanobotAcceptsNull = (path: string[]): boolean => nanobotKey(path)?.[0] === true;

/** Sibling names a misspelt key may have meant: the troupe schema's and nanobot's at the same place. */
function siblings(path: string[], troupeSiblings: string[]): string[] {
  const parent = canonical(path.slice(0, -1));
  const names = new Set(troupeSiblings);
  for (const p of allPatterns()) {
    if (p.length === parent.length + 1 && parent.every((s, i) => p[i] === s || p[i] === "*") && p[parent.length] !== "*") {
      names.add(p[parent.length] as string);
    }
  }
  return [...names];
}

function suggest(key: string, candidates: string[]): string | undefined {
  if (candidates.length === 0) return undefined;
  const lower = key.toLowerCase().replace(/[-_]/g, "");
  const same = candidates.find((c) => c.toLowerCase() === lower);
  if (same) return same;
  const best = closest(lower, candidates.map((c) => c.toLowerCase()));
  const original = candidates.find((c) => c.toLowerCase() === best);
  return original && distance(lower, best) <= Math.max(2, Math.floor(key.length / 3)) ? original : undefined;
}

/** Classifies a key troupe's schema does not have; `troupeSiblings` are the schema's fields beside it. */
export function classifyKey(path: string[], troupeSiblings: string[] = []): KeyKind {
  const segs = canonical(path);
  // nanobot takes any channels.<name> for a channel plugin; the plugin reads its own keys.
  const isChannel = segs[0] === "channels" && segs.length >= 2;
  const known = nanobotKey(path);
  if (known && !(isChannel && segs.length === 2 && !NANOBOT_KEYS[segs.join(".")])) {
    return known[2] === NANOBOT_LATEST ? { kind: "nanobot", first: known[1], last: known[2] } : { kind: "retired", last: known[2] };
  }
  if (isChannel && segs.length === 2 && !NANOBOT_KEYS[`channels.${segs[1]}`] && nanobotKey(["channels", "*"])) {
    const close = suggest(segs[1] as string, siblings(path, troupeSiblings));
    if (!close) return { kind: "plugin-channel", name: path[1] as string };
    return { kind: "typo", suggestion: close };
  }
  return { kind: "typo", suggestion: suggest(path[path.length - 1] as string, siblings(path, troupeSiblings)) };
}

export interface UnknownKeyReport {
  /** One line each for misspelt keys, then one grouped line for each other kind. */
  warnings: string[];
  /** channels.<name> that are enabled but that troupe cannot run. */
  unrunnableChannels: string[];
}

/** Groups dotted paths by their parent: "agents.defaults: dream, unifiedSession; channels: qq". */
function grouped(paths: string[]): string {
  const byParent = new Map<string, string[]>();
  for (const p of paths) {
    const i = p.lastIndexOf(".");
    const parent = i < 0 ? "(top level)" : p.slice(0, i);
    byParent.set(parent, [...(byParent.get(parent) ?? []), i < 0 ? p : p.slice(i + 1)]);
  }
  return [...byParent].map(([parent, names]) => `${parent}: ${names.join(", ")}`).join("; ");
}

const enabledIn = (raw: unknown, path: string[]): boolean => {
  const node = rawValueAt(raw, path);
  return isPlainObject(node) && node.enabled === true;
};

/**
 * The startup report for keys troupe's schema dropped. `unknown` are dotted paths as found in the
 * file; `raw` is the config as read (to see which channels are enabled); `troupeSiblings` gives the
 * schema's field names beside a path, for did-you-mean.
 */
export function reportUnknownKeys(
  unknown: string[],
  raw: unknown,
  troupeSiblings: (path: string[]) => string[],
  describeTypo: (key: string, suggestion?: string) => string,
): UnknownKeyReport {
  const warnings: string[] = [];
  const unsupported: string[] = [];
  const retired: string[] = [];
  const plugins: string[] = [];
  const unrunnableChannels: string[] = [];
  for (const key of unknown) {
    const path = key.split(".");
    const kind = classifyKey(path, troupeSiblings(path));
    const isChannel = path[0] === "channels" && path.length === 2;
    const enabled = isChannel && enabledIn(raw, path);
    if (enabled) unrunnableChannels.push(key);
    const label = enabled ? `${path[1]} (enabled: it will not run)` : undefined;
    if (kind.kind === "typo") warnings.push(describeTypo(key, kind.suggestion));
    else if (!enabled && isInert(path, rawValueAt(raw, path))) continue;
    else if (kind.kind === "nanobot") unsupported.push(label ? `channels.${label}` : key);
    else if (kind.kind === "retired") retired.push(`${key} (last in nanobot ${kind.last})`);
    else plugins.push(label ? `channels.${label}` : key);
  }
  if (unsupported.length) {
    // One line, the keys grouped by why troupe leaves them alone.
    const byReason = new Map<string, string[]>();
    for (const key of unsupported) {
      const reason = unsupportedReason(canonical(key.replace(/ \(enabled: it will not run\)$/, "").split(".")).join("."));
      byReason.set(reason, [...(byReason.get(reason) ?? []), key]);
    }
    const parts = [...byReason].map(([reason, keys]) => `${grouped(keys)} [${reason}]`);
    warnings.push(`not supported by troupe yet, ignored: ${parts.join("; ")}`);
  }
  if (plugins.length) warnings.push(`channel plugins troupe cannot load, ignored: ${grouped(plugins)}`);
  if (retired.length) warnings.push(`retired by nanobot and ignored (remove them): ${retired.join(", ")}`);
  return { warnings, unrunnableChannels };
}
