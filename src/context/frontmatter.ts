import type * as Yaml from "yaml";
import { lazyRequire } from "../builtin.js";

const yaml = lazyRequire<typeof Yaml>("yaml");
type ParseYaml = (text: string) => unknown;

/**
 * A SKILL.md's frontmatter, read as nanobot reads it (YAML between `---` lines) and, when the YAML
 * does not parse, recovered field by field as OpenClaw's parser does: most broken frontmatter is
 * one unquoted ": " inside a description, and every other field is still fine.
 */

export interface Frontmatter {
  /** The fields, as YAML gave them or as recovered. */
  fields: Record<string, unknown>;
  body: string;
  /** Whether the file starts with a frontmatter block at all. */
  present: boolean;
  /** The YAML error when the fields had to be recovered line by line. */
  yamlError?: string;
}

const BLOCK = /^---[ \t]*\r?\n(?:([\s\S]*?)\r?\n)?---[ \t]*(?:\r?\n|$)/;

const isMapping = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

const firstLine = (message: string) => message.split("\n")[0]?.trim() ?? message;

const unquote = (s: string) => {
  const t = s.trim();
  return t.length >= 2 && (t[0] === '"' || t[0] === "'") && t.at(-1) === t[0] ? t.slice(1, -1) : t;
};

/** Removes the common indentation of continuation lines. */
function dedent(lines: string[]): string[] {
  const indents = lines.filter((l) => l.trim()).map((l) => /^\s*/.exec(l)?.[0].length ?? 0);
  const cut = indents.length ? Math.min(...indents) : 0;
  return lines.map((l) => l.slice(cut));
}

/** One top-level field from its key line and the indented lines under it. */
function recoverField(parseYaml: ParseYaml, key: string, rest: string, more: string[]): unknown {
  const chunk = [`${key}:${rest ? ` ${rest}` : ""}`, ...more].join("\n");
  try {
    const parsed: unknown = parseYaml(chunk);
    if (isMapping(parsed) && key in parsed) return parsed[key];
  } catch {
    // This field is the broken one: take its text as written.
  }
  const text = dedent(more).join("\n").trim();
  if (rest.startsWith("|")) return text;
  if (!rest || rest.startsWith(">")) return text.replace(/\s*\n\s*/g, " ");
  return unquote([rest, ...more.map((l) => l.trim())].filter(Boolean).join(" "));
}

/** Top-level `key: value` lines, each with the indented or blank lines that follow it. */
function recoverFields(parseYaml: ParseYaml, block: string): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  const lines = block.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const m = /^([A-Za-z_][\w-]*)[ \t]*:(?:[ \t]+(.*))?$/.exec(lines[i] ?? "");
    if (!m) continue;
    const more: string[] = [];
    while (i + 1 < lines.length && (/^\s/.test(lines[i + 1] ?? "") || (lines[i + 1] ?? "").trim() === "")) more.push(lines[++i] ?? "");
    while (more.length && !more.at(-1)?.trim()) more.pop();
    fields[m[1] as string] = recoverField(parseYaml, m[1] as string, (m[2] ?? "").trim(), more);
  }
  return fields;
}

/** A value YAML could read as something other than the plain string it spells (null, a number, a date, …), or that starts with an indicator. */
const NOT_PLAIN = /^[-?:,[\]{}#&*!|>'"%@`+.~\d]|^(null|Null|NULL|true|True|TRUE|false|False|FALSE)$|:(\s|$)|\s#/;
const BOOLEAN = new Map([
  ["true", true],
  ["True", true],
  ["TRUE", true],
  ["false", false],
  ["False", false],
  ["FALSE", false],
]);
/** Keys YAML reads as something else (null, a boolean), and the one key an object cannot hold as its own. */
const NOT_PLAIN_KEY = /^(null|Null|NULL|true|True|TRUE|false|False|FALSE|__proto__)$/;
/** In JSON, a string followed by a colon is always a key: as many of these as keys parsed means none repeated. */
const JSON_KEY = /"(?:[^"\\]|\\.)*"\s*:/g;
const keyCount = (value: unknown): number =>
  Array.isArray(value) ? value.reduce((n: number, v) => n + keyCount(v), 0) : value && typeof value === "object" ? Object.values(value).reduce((n: number, v) => n + keyCount(v), Object.keys(value).length) : 0;

/**
 * The fields of a frontmatter made only of one-line `key: value` pairs whose values are plain strings,
 * booleans, or JSON (nanobot's `metadata: {"nanobot": …}`), read without the YAML parser (loading and
 * running it was ~25 ms of every start, for the built-in skills). Undefined for anything else: YAML reads it.
 * Whatever it returns, YAML would read the same.
 */
export function simpleFields(block: string): Record<string, unknown> | undefined {
  const fields: Record<string, unknown> = {};
  for (const line of block.split(/\r?\n/)) {
    if (!line.trim()) continue;
    const m = /^([A-Za-z_][\w-]*):[ \t]+(\S.*?)\s*$/.exec(line);
    if (!m || Object.hasOwn(fields, m[1]!) || NOT_PLAIN_KEY.test(m[1]!)) return undefined;
    const value = m[2]!;
    if (BOOLEAN.has(value)) fields[m[1]!] = BOOLEAN.get(value);
    else if (/^[[{]/.test(value) || value.startsWith('"')) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(value);
      } catch {
        return undefined;
      }
      // YAML refuses a mapping with a repeated key; JSON.parse keeps the last one.
      if (keyCount(parsed) !== (value.match(JSON_KEY)?.length ?? 0)) return undefined;
      fields[m[1]!] = parsed;
    } else if (NOT_PLAIN.test(value)) return undefined;
    else fields[m[1]!] = value;
  }
  return fields;
}

export function parseFrontmatter(text: string): Frontmatter {
  const source = text.replace(/^\uFEFF/, "");
  const m = BLOCK.exec(source);
  if (!m) return { fields: {}, body: source.trim(), present: false };
  const block = m[1] ?? "";
  const body = source.slice(m[0].length).trim();
  const simple = simpleFields(block);
  if (simple) return { fields: simple, body, present: true };
  // Loaded before parsing, outside the catch: a parser that is not installed (IncompleteInstallError)
  // is not broken YAML, and the skill cannot be read until troupe is installed whole.
  const parseYaml: ParseYaml = yaml().parse;
  try {
    const parsed: unknown = parseYaml(block);
    if (parsed === null || parsed === undefined) return { fields: {}, body, present: true };
    if (isMapping(parsed)) return { fields: parsed, body, present: true };
    return { fields: recoverFields(parseYaml, block), body, present: true, yamlError: "the frontmatter is not a mapping of fields" };
  } catch (err) {
    return { fields: recoverFields(parseYaml, block), body, present: true, yamlError: firstLine((err as Error).message) };
  }
}
