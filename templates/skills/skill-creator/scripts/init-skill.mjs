#!/usr/bin/env node
// Scaffolds a new skill folder: SKILL.md with placeholders to fill in, and the resource folders asked for.
// Usage: node init-skill.mjs <name> [--path <parent-folder>] [--resources scripts,references,assets] [--examples]
import { existsSync, mkdirSync, writeFileSync, chmodSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { ALLOWED_DIRS, MAX_NAME_LENGTH, NAME_PATTERN } from "./validate-skill.mjs";

const USAGE = `Usage: node init-skill.mjs <name> [--path <parent-folder>] [--resources scripts,references,assets] [--examples]

  <name>        lowercase letters, digits and hyphens (pdf-tools); it becomes the folder's name
  --path        where to create the folder (default: skills, the workspace's skills folder when run there)
  --resources   which resource folders to create, comma-separated (default: none)
  --examples    put an example file in each resource folder`;

const title = (name) => name.split("-").map((w) => w[0].toUpperCase() + w.slice(1)).join(" ");

const skillText = (name) => `---
name: ${name}
description: "[TODO: what this skill does and when to use it: the tasks, file types or phrases that should make the agent read it]"
---

# ${title(name)}

[TODO: one or two sentences on what this skill lets the agent do.]

## When to use

[TODO: the requests this skill is for, in the user's words.]

## How

[TODO: the steps, with the exact commands or tool calls (exec, read_file, web_fetch, write_file...).
Keep it short: the agent is capable; write only what it could not know. Move long reference
material to references/ and say here when to read it.]
`;

const EXAMPLES = {
  scripts: ["example.mjs", '#!/usr/bin/env node\n// An example helper: replace it, or delete it if the skill needs no script.\nconsole.log(`hello from ${process.argv[2] ?? "the skill"}`);\n'],
  references: ["reference.md", "# Reference\n\nDetails the agent reads only when SKILL.md says to (API fields, schemas, long examples).\n"],
  assets: ["template.txt", "Files the skill uses in what it produces (templates, images); not read into the conversation.\n"],
};

export function initSkill(name, { path = "skills", resources = [], examples = false } = {}) {
  if (!NAME_PATTERN.test(name)) throw new Error(`"${name}" is not a skill name: use lowercase letters, digits and single hyphens (like pdf-tools)`);
  if (name.length > MAX_NAME_LENGTH) throw new Error(`"${name}" is ${name.length} characters; a skill name has at most ${MAX_NAME_LENGTH}`);
  const unknown = resources.filter((r) => !ALLOWED_DIRS.includes(r));
  if (unknown.length) throw new Error(`unknown resource folder(s) ${unknown.join(", ")}; choose from ${ALLOWED_DIRS.join(", ")}`);
  const dir = resolve(path, name);
  if (existsSync(dir)) throw new Error(`${dir} already exists; pick another name or edit that skill`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "SKILL.md"), skillText(name));
  for (const r of resources) {
    mkdirSync(join(dir, r));
    if (!examples) continue;
    const [file, text] = EXAMPLES[r];
    writeFileSync(join(dir, r, file), text);
    if (r === "scripts") chmodSync(join(dir, r, file), 0o755);
  }
  return dir;
}

function main(argv) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: { path: { type: "string" }, resources: { type: "string" }, examples: { type: "boolean" }, help: { type: "boolean", short: "h" } } });
  } catch (err) {
    console.error(`${err.message}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help || positionals.length !== 1) {
    console.error(USAGE);
    return values.help ? 0 : 2;
  }
  const resources = (values.resources ?? "").split(",").map((r) => r.trim()).filter(Boolean);
  const dir = initSkill(positionals[0], { path: values.path, resources, examples: values.examples });
  console.log(`created ${dir}`);
  console.log("next: fill in the [TODO] parts of SKILL.md (description first), then run validate-skill.mjs on the folder");
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    process.exit(main(process.argv.slice(2)));
  } catch (err) {
    console.error(`error: ${err.message}`);
    process.exit(1);
  }
}
