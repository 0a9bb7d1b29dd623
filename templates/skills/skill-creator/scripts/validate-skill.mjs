#!/usr/bin/env node
// Checks a skill folder the way troupe and nanobot read it, and says what to fix.
// Usage: node validate-skill.mjs <skill-folder>      exit 0 valid, 1 invalid, 2 bad usage
import { existsSync, lstatSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const NAME_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
export const MAX_NAME_LENGTH = 64;
export const MAX_DESCRIPTION_LENGTH = 1024;
/** Frontmatter keys nanobot's and OpenClaw's loaders know. */
export const ALLOWED_KEYS = ["name", "description", "metadata", "always", "license", "allowed-tools", "homepage"];
/** What may sit next to SKILL.md. */
export const ALLOWED_DIRS = ["scripts", "references", "assets"];

const isMapping = (v) => typeof v === "object" && v !== null && !Array.isArray(v);

async function loadYaml() {
  try {
    return (await import("yaml")).parse;
  } catch {
    throw new Error("this script needs the yaml package, which ships with troupe: run it from troupe's built-in skills folder");
  }
}

function checkRequires(requires, where, problems) {
  if (requires === undefined || requires === null) return;
  if (!isMapping(requires)) return void problems.push(`${where} must be a mapping with bins and env lists`);
  for (const key of ["bins", "env"]) {
    const list = requires[key];
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list) || !list.every((v) => typeof v === "string" && v.trim())) {
      problems.push(`${where}.${key} must be a list of names, like [${key === "bins" ? "gh" : "GITHUB_TOKEN"}]`);
    }
  }
}

function checkMetadata(metadata, problems) {
  if (metadata === undefined || metadata === null) return;
  let data = metadata;
  if (typeof metadata === "string") {
    try {
      data = JSON.parse(metadata);
    } catch (err) {
      return void problems.push(`metadata is text but not valid JSON (${err.message}); write it as {"nanobot":{...}} on one line, or as YAML`);
    }
  }
  if (!isMapping(data)) return void problems.push('metadata must be a mapping such as {"nanobot":{"requires":{"bins":["gh"]}}}');
  for (const key of ["nanobot", "openclaw"]) {
    const payload = data[key];
    if (payload === undefined) continue;
    if (!isMapping(payload)) {
      problems.push(`metadata.${key} must be a mapping`);
      continue;
    }
    checkRequires(payload.requires, `metadata.${key}.requires`, problems);
    if (payload.always !== undefined && typeof payload.always !== "boolean") problems.push(`metadata.${key}.always must be true or false`);
  }
}

/** Every problem of a skill folder, each saying what to change; empty when it is valid. */
export async function validateSkill(folder) {
  const dir = resolve(folder);
  if (!existsSync(dir)) return [`${dir} does not exist`];
  if (!statSync(dir).isDirectory()) return [`${dir} is not a folder; give the skill's folder, the one holding SKILL.md`];
  const file = resolve(dir, "SKILL.md");
  if (!existsSync(file)) return [`${dir} has no SKILL.md`];
  const text = readFileSync(file, "utf8").replace(/^\uFEFF/, "");
  const block = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(text);
  if (!block) return ["SKILL.md must start with a frontmatter block: a line ---, name: and description: lines, and a line ---"];
  const problems = [];
  let fields;
  try {
    fields = (await loadYaml())(block[1]);
  } catch (err) {
    if (/yaml package/.test(err.message)) throw err;
    return [`the frontmatter is not valid YAML (${err.message.split("\n")[0]}); quote a value that contains ": " or starts with [, {, > or |`];
  }
  if (!isMapping(fields)) return ["the frontmatter must be a mapping of fields (name: ..., description: ...)"];

  if ("requires" in fields) problems.push('requires belongs under metadata, as metadata: {"nanobot":{"requires":{"bins":[...],"env":[...]}}}; nanobot does not read it at the top level');
  const unknown = Object.keys(fields).filter((k) => !ALLOWED_KEYS.includes(k) && k !== "requires");
  if (unknown.length) problems.push(`unknown frontmatter key(s) ${unknown.join(", ")}; allowed: ${ALLOWED_KEYS.join(", ")} (put anything else under metadata)`);

  const folderName = basename(dir);
  const name = fields.name;
  if (typeof name !== "string" || !name.trim()) problems.push(`name is missing; write name: ${folderName}`);
  else if (!NAME_PATTERN.test(name)) problems.push(`name "${name}" must be lowercase letters, digits and single hyphens (like pdf-tools)`);
  else if (name.length > MAX_NAME_LENGTH) problems.push(`name is ${name.length} characters; at most ${MAX_NAME_LENGTH}`);
  else if (name !== folderName) problems.push(`name "${name}" differs from its folder "${folderName}"; the folder is the skill's name, so rename one of them`);

  const description = fields.description;
  if (typeof description !== "string" || !description.trim()) {
    problems.push("description is missing; say in one or two sentences what the skill does and when to use it");
  } else {
    const d = description.trim();
    if (/\[todo|todo:/i.test(d)) problems.push("description still has the TODO placeholder; replace it with what the skill does and when to use it");
    if (/[<>]/.test(d)) problems.push("description must not contain < or >");
    if (d.length > MAX_DESCRIPTION_LENGTH) problems.push(`description is ${d.length} characters; at most ${MAX_DESCRIPTION_LENGTH}`);
  }
  if (fields.always !== undefined && typeof fields.always !== "boolean") problems.push("always must be true or false");
  checkMetadata(fields.metadata, problems);

  const body = text.slice(block[0].length).trim();
  if (!body) problems.push("SKILL.md has no instructions after the frontmatter");
  if (/\[TODO:/.test(body)) problems.push("SKILL.md still has [TODO ...] placeholders in its instructions");

  for (const entry of readdirSync(dir)) {
    if (entry === "SKILL.md") continue;
    const stat = lstatSync(resolve(dir, entry));
    if (stat.isDirectory() && ALLOWED_DIRS.includes(entry)) continue;
    problems.push(`${entry} should not be in the skill's folder: only SKILL.md, ${ALLOWED_DIRS.map((d) => `${d}/`).join(", ")} belong there`);
  }
  return problems;
}

async function main(args) {
  if (args[0] === "-h" || args[0] === "--help") {
    console.log("Usage: node validate-skill.mjs <skill-folder>");
    return 0;
  }
  if (args.length !== 1) {
    console.error("Usage: node validate-skill.mjs <skill-folder>");
    return 2;
  }
  const problems = await validateSkill(args[0]);
  if (problems.length === 0) {
    console.log(`ok: ${basename(resolve(args[0]))} is a valid skill`);
    return 0;
  }
  console.log(`invalid: ${resolve(args[0])}`);
  for (const p of problems) console.log(`- ${p}`);
  return 1;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      console.error(`error: ${err.message}`);
      process.exit(1);
    },
  );
}
