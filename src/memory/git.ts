import { existsSync } from "node:fs";
import * as fs from "node:fs";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type IsomorphicGit from "isomorphic-git";
import { TroupeError } from "../errors.js";
import { writeAtomic } from "./files.js";
import { lineCounts, unifiedHunks } from "./line-diff.js";

/**
 * The git history of memory: a repository at the workspace root that tracks only SOUL.md, USER.md
 * and memory/MEMORY.md (its .gitignore ignores everything else), made with isomorphic-git so no
 * git binary is needed. Dream commits each run; /dream-restore puts the files back as a new commit.
 */

export const TRACKED = ["SOUL.md", "USER.md", "memory/MEMORY.md"] as const;
const GITIGNORE = ["# troupe: only the memory files Dream manages are tracked", "/*", "!/.gitignore", "!/SOUL.md", "!/USER.md", "!/memory/", "/memory/*", "!/memory/MEMORY.md", ""].join("\n");
const AUTHOR = { name: "troupe dream", email: "dream@troupe.invalid" };

export interface MemoryCommit {
  sha: string;
  message: string;
  /** Seconds since the epoch. */
  timestamp: number;
}

export class MemoryGitError extends TroupeError {}

// isomorphic-git (with pako and crc-32) loads at the first git operation, not with every turn.
let gitModule: Promise<typeof IsomorphicGit> | undefined;
const loadGit = () => (gitModule ??= import("isomorphic-git").then((m) => m.default));

/** Creates the repository on first use (with one commit of the files as they are). */
export async function ensureMemoryRepo(workspace: string, now: () => number = Date.now): Promise<void> {
  if (existsSync(join(workspace, ".git"))) return;
  const git = await loadGit();
  await git.init({ fs, dir: workspace, defaultBranch: "main" });
  if (!existsSync(join(workspace, ".gitignore"))) await writeFile(join(workspace, ".gitignore"), GITIGNORE);
  await git.add({ fs, dir: workspace, filepath: ".gitignore" });
  await commitMemory(workspace, "memory: start tracking SOUL.md, USER.md and memory/MEMORY.md", now, true);
}

/** Stages the tracked files as they are on disk; returns which changed against HEAD. */
async function stage(workspace: string): Promise<string[]> {
  const git = await loadGit();
  const changed: string[] = [];
  for (const filepath of TRACKED) {
    const [, head, work] = (await git.statusMatrix({ fs, dir: workspace, filepaths: [filepath], ignored: true })).find((r) => r[0] === filepath) ?? [filepath, 0, 0];
    if (work === 0) {
      if (head === 1) {
        await git.remove({ fs, dir: workspace, filepath });
        changed.push(filepath);
      }
      continue;
    }
    await git.add({ fs, dir: workspace, filepath, force: true });
    const [, h2, w2, s2] = (await git.statusMatrix({ fs, dir: workspace, filepaths: [filepath], ignored: true })).find((r) => r[0] === filepath)!;
    if (!(h2 === 1 && w2 === 1 && s2 === 1)) changed.push(filepath);
  }
  return changed;
}

/** Commits the tracked files if any changed; returns the new commit's sha, or undefined when nothing changed. */
export async function commitMemory(workspace: string, message: string, now: () => number = Date.now, always = false): Promise<string | undefined> {
  const git = await loadGit();
  await ensureMemoryRepo(workspace, now);
  const changed = await stage(workspace);
  if (!changed.length && !always) return undefined;
  const timestamp = Math.floor(now() / 1000);
  return git.commit({ fs, dir: workspace, message, author: { ...AUTHOR, timestamp, timezoneOffset: 0 } });
}

/** Which tracked files differ from HEAD, with their line counts (the body of a Dream commit message). */
export async function changeSummary(workspace: string): Promise<string[]> {
  const git = await loadGit();
  await ensureMemoryRepo(workspace);
  const head = await git.resolveRef({ fs, dir: workspace, ref: "HEAD" });
  const lines: string[] = [];
  for (const file of TRACKED) {
    const before = await fileAt(workspace, head, file);
    const after = existsSync(join(workspace, file)) ? await readFile(join(workspace, file), "utf8") : undefined;
    if ((before ?? "") === (after ?? "")) continue;
    const { added, removed } = lineCounts(before ?? "", after ?? "");
    lines.push(`${file}: ${before === undefined ? "created, " : after === undefined ? "deleted, " : ""}+${added} -${removed} lines`);
  }
  return lines;
}

async function fileAt(workspace: string, sha: string, filepath: string): Promise<string | undefined> {
  const git = await loadGit();
  try {
    const { blob } = await git.readBlob({ fs, dir: workspace, oid: sha, filepath });
    return Buffer.from(blob).toString("utf8");
  } catch {
    return undefined;
  }
}

export async function memoryLog(workspace: string, depth = 10): Promise<MemoryCommit[]> {
  const git = await loadGit();
  if (!existsSync(join(workspace, ".git"))) return [];
  try {
    return (await git.log({ fs, dir: workspace, depth })).map((c) => ({ sha: c.oid, message: c.commit.message.trim(), timestamp: c.commit.author.timestamp }));
  } catch {
    return [];
  }
}

/** A full sha from an abbreviation, or a clear error. */
export async function resolveCommit(workspace: string, sha: string): Promise<string> {
  const git = await loadGit();
  if (!/^[0-9a-f]{4,40}$/i.test(sha)) throw new MemoryGitError(`"${sha}" is not a commit sha (see /dream-log for them)`);
  try {
    const oid = await git.expandOid({ fs, dir: workspace, oid: sha.toLowerCase() });
    await git.readCommit({ fs, dir: workspace, oid });
    return oid;
  } catch {
    throw new MemoryGitError(`no memory commit ${sha} (see /dream-log for them)`);
  }
}

/** One commit: its message and the unified diff of the tracked files against its parent. */
export async function commitDiff(workspace: string, sha: string): Promise<{ commit: MemoryCommit; diff: string }> {
  const git = await loadGit();
  const oid = await resolveCommit(workspace, sha);
  const { commit } = await git.readCommit({ fs, dir: workspace, oid });
  const parent = commit.parent[0];
  const parts: string[] = [];
  for (const file of TRACKED) {
    const before = parent ? await fileAt(workspace, parent, file) : undefined;
    const after = await fileAt(workspace, oid, file);
    if ((before ?? "") === (after ?? "")) continue;
    parts.push(`--- a/${file}`, `+++ b/${file}`, ...unifiedHunks(before ?? "", after ?? ""));
  }
  return { commit: { sha: oid, message: commit.message.trim(), timestamp: commit.author.timestamp }, diff: parts.join("\n") };
}

/** Puts the tracked files back as they were at `sha`, as a new commit; returns it (undefined: already so). */
export async function restoreMemory(workspace: string, sha: string, now: () => number = Date.now): Promise<{ from: string; sha: string | undefined }> {
  await ensureMemoryRepo(workspace, now);
  const oid = await resolveCommit(workspace, sha);
  for (const file of TRACKED) {
    const text = await fileAt(workspace, oid, file);
    const path = join(workspace, file);
    if (text === undefined) await rm(path, { force: true });
    else {
      await mkdir(dirname(path), { recursive: true });
      await writeAtomic(path, text);
    }
  }
  return { from: oid, sha: await commitMemory(workspace, `memory: restore ${oid.slice(0, 7)}`, now) };
}
