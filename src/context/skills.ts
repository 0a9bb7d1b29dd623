import { existsSync, type Dirent } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { compareNames } from "../compare-names.js";
import { parseFrontmatter } from "./frontmatter.js";
import { BUILTIN_SKILLS_DIR } from "./templates.js";

/**
 * Skills as nanobot reads them: `<dir>/<name>/SKILL.md`, the folder is the name, requirements and
 * `always` in the frontmatter's `metadata` under its `nanobot` or `openclaw` key (a mapping, or a
 * JSON string), workspace skills shadowing built-in ones. troupe also reads `requires` and `always`
 * at the top level of the frontmatter (where nanobot ignores them): a skill that says it needs a
 * binary does need it. A file troupe cannot make sense of is listed as broken with the reason;
 * it never stops a turn.
 */

export interface Skill {
  /** The folder's name. */
  name: string;
  /** One line: the frontmatter's description, else the first line of the body, else the name. */
  description: string;
  path: string;
  always: boolean;
  source: "workspace" | "builtin";
  /** What this machine lacks, as nanobot says it: "CLI: gh", "ENV: GITHUB_TOKEN". */
  missing: string[];
  /** Why the skill cannot be used as written (malformed requirements); empty when it is fine. */
  broken: string[];
  /** What needed recovery or differs from what the file says (logged once). */
  warnings: string[];
  body: string;
}

export interface LoadSkillsOptions {
  /** Folder names left out (agents.defaults.disabledSkills). */
  disabled?: string[];
  /** Called once per process for each warning of each file. */
  onWarning?: (warning: string) => void;
}

const isMapping = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** One line of text: block scalars keep a trailing newline, descriptions may wrap. */
const oneLine = (s: string) => s.replace(/\s+/g, " ").trim();

function onPath(bin: string, env: NodeJS.ProcessEnv): boolean {
  return (env.PATH ?? "").split(delimiter).some((dir) => dir && existsSync(join(dir, bin)));
}

/** nanobot's payload inside `metadata`: its `nanobot` key, else its `openclaw` key. */
function metadataPayload(raw: unknown, warnings: string[]): Record<string, unknown> {
  let data = raw;
  if (typeof raw === "string") {
    try {
      data = JSON.parse(raw);
    } catch (err) {
      warnings.push(`metadata is not valid JSON (${(err as Error).message}); its requirements are not read`);
      return {};
    }
  }
  if (!isMapping(data)) return {};
  const payload = "nanobot" in data ? data.nanobot : data.openclaw;
  return isMapping(payload) ? payload : {};
}

/** A requirement list, or the reason it is not one. */
function requirementList(value: unknown, where: string, broken: string[]): string[] {
  if (value === undefined || value === null) return [];
  // nanobot skips null and empty entries (`bins: [null, ""]`): they name nothing, so nothing is missing.
  const named = Array.isArray(value) ? value.filter((v) => v !== null && v !== "") : value;
  if (Array.isArray(named) && named.every((v) => typeof v === "string")) return named.map((v) => v.trim()).filter(Boolean);
  const got = Array.isArray(value) ? "a list with non-text items" : typeof value === "string" ? `the text ${JSON.stringify(value)}` : `a ${typeof value}`;
  const fix = typeof value === "string" ? ` (write [${value}])` : "";
  broken.push(`${where} must be a list of names, not ${got}${fix}`);
  return [];
}

function requirements(where: string, requires: unknown, broken: string[]): { bins: string[]; env: string[] } {
  if (requires === undefined || requires === null) return { bins: [], env: [] };
  if (!isMapping(requires)) {
    broken.push(`${where} must be a mapping with bins and env lists`);
    return { bins: [], env: [] };
  }
  return { bins: requirementList(requires.bins, `${where}.bins`, broken), env: requirementList(requires.env, `${where}.env`, broken) };
}

const isTrue = (v: unknown) => v === true || v === "true";

/** Reads one SKILL.md; never throws for what the file says. */
export function readSkill(text: string, name: string, path: string, source: Skill["source"], env: NodeJS.ProcessEnv): Skill {
  const { fields, body, present, yamlError } = parseFrontmatter(text);
  const warnings: string[] = [];
  const broken: string[] = [];
  if (!present) warnings.push(`${path} has no frontmatter (a --- block with name and description); its first line is used as the description`);
  if (yamlError) warnings.push(`${path}: the frontmatter is not valid YAML (${yamlError}); its fields were recovered line by line`);
  if (typeof fields.name === "string" && fields.name.trim() && fields.name.trim() !== name) {
    warnings.push(`${path}: its frontmatter name "${fields.name.trim()}" differs from its folder; the skill is named "${name}" after the folder`);
  }
  const meta = metadataPayload(fields.metadata, warnings);
  const top = requirements("requires", fields.requires, broken);
  const nested = requirements("metadata requires", meta.requires, broken);
  const bins = [...new Set([...top.bins, ...nested.bins])];
  const envs = [...new Set([...top.env, ...nested.env])];
  const missing = [...bins.filter((b) => !onPath(b, env)).map((b) => `CLI: ${b}`), ...envs.filter((e) => !env[e]).map((e) => `ENV: ${e}`)];
  const firstBodyLine = body.split("\n").map((l) => l.replace(/^#+\s*/, "").trim()).find(Boolean);
  const description =
    typeof fields.description === "string" || typeof fields.description === "number"
      ? oneLine(String(fields.description))
      : !present && firstBodyLine
        ? oneLine(firstBodyLine).slice(0, 200)
        : "";
  return {
    name,
    description: description || name,
    path,
    always: isTrue(meta.always) || isTrue(fields.always),
    source,
    missing,
    broken,
    warnings,
    body,
  };
}

async function loadDir(dir: string, source: Skill["source"], env: NodeJS.ProcessEnv): Promise<Skill[]> {
  if (!existsSync(dir)) return [];
  // The files are read at once, not one after another: each read is several round trips to libuv's
  // threads, and a turn waits for all of them before it calls the model.
  const read = async (entry: Dirent): Promise<Skill | undefined> => {
    const path = join(dir, entry.name, "SKILL.md");
    if (!entry.isDirectory() || !existsSync(path)) return undefined;
    let text: string;
    try {
      text = await readFile(path, "utf8");
    } catch (err) {
      const skill = readSkill("", entry.name, path, source, env);
      return { ...skill, broken: [`cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`] };
    }
    return readSkill(text, entry.name, path, source, env);
  };
  const skills = await Promise.all((await readdir(dir, { withFileTypes: true })).map(read));
  return skills.filter((s): s is Skill => s !== undefined);
}

/** Warnings already given, so a file read at every turn is reported once. */
const warned = new Set<string>();

/** Workspace skills (<workspace>/skills) shadow built-in ones of the same name; disabled ones are left out. */
export async function loadSkills(workspace: string, env: NodeJS.ProcessEnv = process.env, opts: LoadSkillsOptions = {}): Promise<Skill[]> {
  const own = await loadDir(join(workspace, "skills"), "workspace", env);
  const names = new Set(own.map((s) => s.name));
  const builtin = (await loadDir(BUILTIN_SKILLS_DIR, "builtin", env)).filter((s) => !names.has(s.name));
  const disabled = new Set(opts.disabled ?? []);
  const skills = [...own, ...builtin].filter((s) => !disabled.has(s.name)).sort((a, b) => compareNames(a.name, b.name));
  if (opts.onWarning) {
    for (const s of skills) {
      for (const w of [...s.warnings, ...s.broken.map((b) => `${s.path}: ${b}; the skill is listed as broken`)]) {
        if (warned.has(w)) continue;
        warned.add(w);
        opts.onWarning(w);
      }
    }
  }
  return skills;
}

/** Whether a skill's requirements are met and the file is well formed. */
export const usable = (s: Skill) => s.missing.length === 0 && s.broken.length === 0;

/** The skills a user message names as `$skill-name` (a word of its own), in order of first mention. */
export function mentionedSkills(text: string, skills: Skill[]): Skill[] {
  // Most messages name no skill: no `$`, no scan (the pattern below is costly on every message of every turn).
  if (skills.length === 0 || !text.includes("$")) return [];
  const byName = new Map(skills.map((s) => [s.name, s]));
  const found: Skill[] = [];
  // As nanobot: a `$` not preceded by a letter, digit, `_` or `$`; a name ending a sentence ("$weather.") loses the stop.
  for (const m of text.matchAll(/(?<![\p{L}\p{N}_$])\$([A-Za-z0-9][\w.-]*)/gu)) {
    const word = m[1] as string;
    const skill = byName.get(word) ?? byName.get(word.replace(/[.-]+$/, ""));
    if (skill && !found.includes(skill)) found.push(skill);
  }
  return found;
}

/** The user's message with the full text of each skill it names with `$name`, for this turn only. */
export function withMentionedSkills(text: string, skills: Skill[]): string {
  // An always-on skill is in the system prompt already (nanobot leaves it out here too).
  const named = mentionedSkills(text, skills).filter((s) => !(s.always && usable(s)));
  if (named.length === 0) return text;
  const blocks = named.map((s) => {
    const note = s.broken.length ? ` (broken: ${s.broken.join("; ")})` : s.missing.length ? ` (unavailable: ${s.missing.join(", ")})` : "";
    return `[Skill: ${s.name}, loaded because the message names $${s.name}${note}]\n${s.body}\n[/Skill: ${s.name}]`;
  });
  return `${blocks.join("\n\n")}\n\n${text}`;
}
