#!/usr/bin/env node
// Packs a valid skill folder into <name>.skill: a zip whose entries sit under <name>/, the form
// clawhub's install script (and nanobot) unpack into a skills folder.
// Usage: node package-skill.mjs <skill-folder> [output-folder]      (default output: the current folder)
import { lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { validateSkill } from "./validate-skill.mjs";

/** Folders and files that never go into a package. */
const SKIPPED = new Set([".git", ".svn", ".hg", "node_modules", "__pycache__", ".DS_Store"]);

async function loadZip() {
  try {
    return (await import("fflate")).zipSync;
  } catch {
    throw new Error("this script needs the fflate package, which ships with troupe: run it from troupe's built-in skills folder");
  }
}

/** The files to pack, relative to the skill folder; a symbolic link is refused (the package must hold what it names). */
function filesOf(root, skip) {
  const files = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir).sort()) {
      if (SKIPPED.has(entry)) continue;
      const full = join(dir, entry);
      const stat = lstatSync(full);
      if (stat.isSymbolicLink()) throw new Error(`${relative(root, full)} is a symbolic link; replace it with the file itself before packaging`);
      if (stat.isDirectory()) walk(full);
      else if (stat.isFile() && full !== skip) files.push(full);
    }
  };
  walk(root);
  return files;
}

/** Validates and packs the skill; returns the archive's path and the entries written. */
export async function packageSkill(folder, outDir = process.cwd()) {
  const dir = resolve(folder);
  const problems = await validateSkill(dir);
  if (problems.length) throw new Error(`not packaged: ${dir} is not a valid skill:\n${problems.map((p) => `- ${p}`).join("\n")}`);
  const name = basename(dir);
  mkdirSync(resolve(outDir), { recursive: true });
  const archive = resolve(outDir, `${name}.skill`);
  const zipSync = await loadZip();
  const tree = {};
  const entries = [];
  for (const file of filesOf(dir, archive)) {
    const inside = `${name}/${relative(dir, file).split(sep).join("/")}`;
    // Keep the executable bit of scripts (zip's Unix mode lives in the upper half of the external attributes).
    const mode = lstatSync(file).mode & 0o777;
    tree[inside] = [readFileSync(file), { level: 9, os: 3, attrs: (0o100000 | mode) << 16 }];
    entries.push(inside);
  }
  writeFileSync(archive, zipSync(tree, { mtime: new Date("2000-01-01T00:00:00Z") }));
  return { archive, entries };
}

async function main(args) {
  if (args[0] === "-h" || args[0] === "--help") {
    console.log("Usage: node package-skill.mjs <skill-folder> [output-folder]");
    return 0;
  }
  if (args.length < 1 || args.length > 2) {
    console.error("Usage: node package-skill.mjs <skill-folder> [output-folder]");
    return 2;
  }
  const { archive, entries } = await packageSkill(args[0], args[1]);
  for (const e of entries) console.log(`  added ${e}`);
  console.log(`packaged ${archive}`);
  return 0;
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
