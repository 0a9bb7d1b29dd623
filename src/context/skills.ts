import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { parse as parseYaml } from "yaml";
import { BUILTIN_SKILLS_DIR } from "./templates.js";

export interface Skill {
  name: string;
  description: string;
  path: string;
  always: boolean;
  source: "workspace" | "builtin";
  /** Binaries and environment variables the skill needs that this machine lacks. */
  missing: string[];
  body: string;
}

interface Frontmatter {
  name?: string;
  description?: string;
  always?: boolean;
  requires?: { bins?: string[]; env?: string[] };
}

export function splitFrontmatter(text: string): { meta: Frontmatter; body: string } {
  const m = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?/.exec(text);
  if (!m) return { meta: {}, body: text.trim() };
  let meta: Frontmatter = {};
  try {
    const parsed: unknown = parseYaml(m[1] ?? "");
    if (parsed && typeof parsed === "object") meta = parsed as Frontmatter;
  } catch {
    // A skill with broken frontmatter still loads, by its folder name.
  }
  return { meta, body: text.slice(m[0].length).trim() };
}

function onPath(bin: string, env: NodeJS.ProcessEnv): boolean {
  return (env.PATH ?? "").split(delimiter).some((dir) => dir && existsSync(join(dir, bin)));
}

async function loadDir(dir: string, source: Skill["source"], env: NodeJS.ProcessEnv): Promise<Skill[]> {
  if (!existsSync(dir)) return [];
  const skills: Skill[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name, "SKILL.md");
    if (!entry.isDirectory() || !existsSync(path)) continue;
    const { meta, body } = splitFrontmatter(await readFile(path, "utf8"));
    const missing = [
      ...(meta.requires?.bins ?? []).filter((b) => !onPath(b, env)).map((b) => `bin:${b}`),
      ...(meta.requires?.env ?? []).filter((e) => !env[e]).map((e) => `env:${e}`),
    ];
    skills.push({
      name: String(meta.name ?? entry.name),
      description: String(meta.description ?? ""),
      path,
      always: meta.always === true,
      source,
      missing,
      body,
    });
  }
  return skills;
}

/** Workspace skills (<workspace>/skills) override built-in ones of the same name. */
export async function loadSkills(workspace: string, env: NodeJS.ProcessEnv = process.env): Promise<Skill[]> {
  const own = await loadDir(join(workspace, "skills"), "workspace", env);
  const names = new Set(own.map((s) => s.name));
  const builtin = (await loadDir(BUILTIN_SKILLS_DIR, "builtin", env)).filter((s) => !names.has(s.name));
  return [...own, ...builtin].sort((a, b) => a.name.localeCompare(b.name));
}
