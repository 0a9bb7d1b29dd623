import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join, relative, resolve, sep } from "node:path";
import type { Logger } from "pino";
import { loadSkills } from "../context/skills.js";
import { TEMPLATES_DIR } from "../context/templates.js";
import { CorruptRecordError } from "../errors.js";
import { fault } from "../fault.js";
import type { LlmProvider } from "../providers/client.js";
import { assistantMessage, type ChatMessage } from "../providers/messages.js";
import type { Store } from "../store/store.js";
import type { Tool } from "../tools/contract.js";
import { ToolError } from "../tools/contract.js";
import { editFileTool } from "../tools/builtin/edit-file.js";
import { readFileTool } from "../tools/builtin/read-file.js";
import { writeFileTool } from "../tools/builtin/write-file.js";
import { createToolRegistry, type ToolRegistry } from "../tools/registry.js";
import type { Sandbox } from "../tools/sandbox.js";
import { NOTHING_TO_DIGEST } from "./commands.js";
import { readDreamRecord, writeDreamRecord as writeRecord, type DreamRecord, type DreamRun } from "./dream-record.js";
import { dreamGuide } from "./dream-prompt.js";
import { readText, type MemoryFiles } from "./files.js";
import { changeSummary, commitMemory, ensureMemoryRepo, memoryLog } from "./git.js";

/**
 * Dream (nanobot's second memory layer): every intervalH hours it compares the next batch of
 * history entries with SOUL.md, USER.md and memory/MEMORY.md (phase 1, one model call, no tools),
 * applies the edits it decided on with read/edit/write tools limited to those files and new skills
 * (phase 2), then commits the change to the memory's git history and advances .dream_cursor. As in
 * nanobot v0.3.0, the cursor moves only when a memory file changed (without a usable git history:
 * when the run completed): a run that changed nothing leaves the batch to the next scheduled run, and
 * after MAX_UNCHANGED_RUNS such runs in a row the batch is taken as digested, so it cannot hold up
 * Dream (and, as history.jsonl keeps undigested entries, the file) for ever.
 *
 * Each phase ends by writing the run's next phase to LevelDB (synced), so a killed Dream resumes at
 * the phase it was in: analysing and committing are safe to repeat; editing restarts from the
 * files as they are now with the analysis already made. The deadline is stored too.
 */


const FILE_EMBED_CAP = 8_000;
const ENTRY_CAP = 1_000;
const NO_CHANGES = /^\(?no changes\)?\.?$/i;
/** Runs in a row that may change nothing on one batch before it is taken as digested. */
export const MAX_UNCHANGED_RUNS = 3;

export interface DreamSettings {
  intervalH: number;
  maxBatchSize: number;
  maxIterations: number;
}

export interface DreamDeps {
  store: Store;
  provider: LlmProvider;
  workspace: string;
  files: MemoryFiles;
  settings: DreamSettings;
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
  now?: () => number;
}



let templates: Map<string, Promise<string>> | undefined;
const template = (name: string) => {
  templates ??= new Map();
  let t = templates.get(name);
  if (!t) templates.set(name, (t = readFile(join(TEMPLATES_DIR, "prompts", `${name}.md`), "utf8")));
  return t;
};

/** Only the three memory files and skills/<name>/SKILL.md may be written; a new skill must not shadow an existing one. */
export function dreamWritable(workspace: string, path: string, existingSkills: string[], creating: boolean): string | undefined {
  const rel = relative(workspace, resolve(workspace, path)).split(sep).join("/");
  if (["SOUL.md", "USER.md", "memory/MEMORY.md"].includes(rel)) return undefined;
  const skill = /^skills\/([a-z0-9][a-z0-9._-]*)\/SKILL\.md$/i.exec(rel);
  if (!skill) return `Dream may only write SOUL.md, USER.md, memory/MEMORY.md and skills/<name>/SKILL.md, not ${path}`;
  if (creating && !existsSync(resolve(workspace, rel)) && existingSkills.includes(skill[1]!)) {
    return `a skill named ${skill[1]} exists already; merge into it with edit_file instead of creating a second one`;
  }
  return undefined;
}

function limited(tool: Tool, workspace: string, skills: () => string[]): Tool {
  return {
    ...tool,
    async execute(args, ctx) {
      const problem = dreamWritable(workspace, String(args.path ?? ""), skills(), tool.name === "write_file");
      if (problem) throw new ToolError(problem);
      return tool.execute(args, ctx);
    },
  };
}

/** read_file anywhere in the workspace (and the built-in skills); edit_file and write_file only on Dream's files. */
export function dreamTools(workspace: string, skills: () => string[]): ToolRegistry {
  const sandbox: Sandbox = { workspace, restrict: true, readableRoots: [join(TEMPLATES_DIR, "skills")], allowHardLinks: false };
  return createToolRegistry([readFileTool(sandbox), limited(editFileTool(sandbox), workspace, skills), limited(writeFileTool(sandbox), workspace, skills)]);
}

async function memoryFilesSection(workspace: string): Promise<string> {
  const blocks: string[] = [];
  for (const file of ["SOUL.md", "USER.md", "memory/MEMORY.md"]) {
    let text = await readText(join(workspace, file));
    if (text.length > FILE_EMBED_CAP) text = `${text.slice(0, FILE_EMBED_CAP)}\n...[truncated]`;
    blocks.push(`### ${file}\n${text.trim() ? text.trim() : "(empty)"}`);
  }
  return `## Current Memory Files\n\n${blocks.join("\n\n")}`;
}

export function createDream(deps: DreamDeps) {
  const now = deps.now ?? Date.now;
  const intervalMs = deps.settings.intervalH * 3_600_000;
  const skillNames = async () => (await loadSkills(deps.workspace, deps.env)).map((s) => s.name);

  /**
   * The stored record, or a fresh one (stored at once, so the first deadline survives a restart too).
   * A record that does not read is replaced the same way, logged: it holds a schedule and a run's
   * progress, not the cursor, so Dream goes on (an interrupted run starts again).
   */
  async function load(): Promise<DreamRecord> {
    const stored = await readDreamRecord(deps.store).catch((err: unknown) => {
      if (!(err instanceof CorruptRecordError)) throw err;
      deps.logger?.warn({ err }, "Dream's record does not read; a new one replaces it");
    });
    if (stored) return stored;
    const fresh: DreamRecord = { version: 1, nextAt: now() + intervalMs, run: null, lastRun: null };
    await writeRecord(deps.store, fresh);
    return fresh;
  }

  async function finish(result: string, sha: string | null, unchanged: DreamRecord["unchanged"] = null): Promise<DreamRecord> {
    const next: DreamRecord = { version: 1, nextAt: now() + intervalMs, run: null, lastRun: { at: now(), result, sha }, unchanged };
    await writeRecord(deps.store, next);
    deps.logger?.info({ result, sha }, "dream run finished");
    return next;
  }

  /** The run to carry on (one interrupted by a crash), or a new one for the next batch; undefined when there is nothing to digest. */
  async function begin(): Promise<DreamRun | undefined> {
    const record = await load();
    if (record.run) return record.run;
    const batch = (await deps.files.undigested()).slice(0, deps.settings.maxBatchSize);
    if (!batch.length) {
      await finish(NOTHING_TO_DIGEST, null);
      return undefined;
    }
    // The repository exists before any edit, so the first run's change is a commit of its own.
    // Without one (it cannot be made) Dream still runs: commit() falls back to nanobot's completion check.
    await ensureMemoryRepo(deps.workspace, now).catch((error: unknown) => deps.logger?.warn({ err: error }, "dream: cannot set up the memory git history"));
    const run: DreamRun = {
      id: `${now().toString(36)}-${randomBytes(3).toString("hex")}`,
      phase: "analysing",
      fromCursor: await deps.files.dreamCursor(),
      toCursor: batch.at(-1)!.cursor,
      entries: batch.length,
      startedAt: now(),
    };
    await writeRecord(deps.store, { ...record, run });
    return run;
  }

  async function advance(run: DreamRun): Promise<DreamRun> {
    const record = await load();
    await writeRecord(deps.store, { ...record, run });
    return run;
  }

  /** Phase 1: one model call, no tools. */
  async function analyse(run: DreamRun, signal?: AbortSignal): Promise<DreamRun> {
    fault("dream-analysing");
    const entries = (await deps.files.readHistory()).filter((e) => e.cursor > run.fromCursor && e.cursor <= run.toCursor);
    const history = entries.map((e) => `[${e.timestamp}] ${e.content.length > ENTRY_CAP ? `${e.content.slice(0, ENTRY_CAP)}…` : e.content}`).join("\n");
    const skills = (await loadSkills(deps.workspace, deps.env)).map((s) => `- ${s.name}: ${s.description || "(no description)"}`).join("\n") || "(none)";
    const r = await deps.provider.chat({
      messages: [
        { role: "system", content: await dreamGuide(deps.workspace) },
        { role: "user", content: `## Conversation History\n\n${history}\n\n${await memoryFilesSection(deps.workspace)}\n\n## Existing Skills\n\n${skills}` },
      ],
      tools: [],
      signal,
    });
    const analysis = r.content.trim() || "(no changes)";
    // Nothing to change: straight to committing, the run completed.
    return advance({ ...run, analysis, phase: NO_CHANGES.test(analysis) ? "committing" : "editing", ...(NO_CHANGES.test(analysis) ? { summary: "no changes", completed: true } : {}) });
  }

  /** Phase 2: a tool loop limited to the memory files and skills, at most maxIterations model calls. */
  async function edit(run: DreamRun, signal?: AbortSignal): Promise<DreamRun> {
    fault("dream-editing");
    const names = await skillNames();
    const registry = dreamTools(deps.workspace, () => names);
    const messages: ChatMessage[] = [
      { role: "system", content: await template("dream-edit") },
      { role: "user", content: `## Analysis\n\n${run.analysis ?? ""}\n\n${await memoryFilesSection(deps.workspace)}` },
    ];
    let summary = `stopped after ${deps.settings.maxIterations} rounds`;
    let completed = false;
    for (let i = 0; i < deps.settings.maxIterations; i++) {
      const r = await deps.provider.chat({ messages, tools: registry.schemas(), signal });
      messages.push(assistantMessage(r));
      if (!r.toolCalls.length) {
        summary = r.content.trim() || "no changes";
        completed = true;
        break;
      }
      for (const [k, call] of r.toolCalls.entries()) {
        const ctx = { workspace: deps.workspace, sessionKey: "dream", turnId: run.id, callId: call.id, idempotencyKey: `dream:${run.id}:${i}:${k}`, signal: signal ?? new AbortController().signal };
        const result = await registry.execute(call.name, call.arguments, ctx, call.argumentsError);
        messages.push({ role: "tool", tool_call_id: call.id, name: call.name, content: result });
      }
    }
    return advance({ ...run, phase: "committing", summary, completed });
  }

  /** The tracked files' changes, or why the memory's git history cannot tell them. */
  async function changes(): Promise<{ changes: string[] } | { problem: string }> {
    try {
      return { changes: await changeSummary(deps.workspace) };
    } catch (error) {
      deps.logger?.warn({ err: error }, "dream: the memory git history is unusable");
      return { problem: error instanceof Error ? error.message : String(error) };
    }
  }

  /** Commits what changed and advances .dream_cursor; a run that changed nothing leaves the cursor (see the top). */
  async function commit(run: DreamRun): Promise<DreamRecord> {
    fault("dream-committing");
    const range = `${run.fromCursor + 1}–${run.toCursor}`;
    const body = `History entries ${range} (${run.entries}).`;
    const title = `dream: ${run.summary && !NO_CHANGES.test(run.summary) ? run.summary.split("\n")[0]!.slice(0, 120) : `digest history ${range}`}`;
    const found = await changes();
    if ("changes" in found && found.changes.length) {
      const sha = (await commitMemory(deps.workspace, [title, "", body, ...found.changes].join("\n"), now)) ?? null;
      await deps.files.setDreamCursor(run.toCursor);
      return finish(`${title.slice("dream: ".length)} (commit ${sha?.slice(0, 7)}; ${found.changes.join("; ")})`, sha);
    }
    // Resumed after its commit landed (a crash before the cursor moved): the change was made.
    const [head] = "changes" in found ? await memoryLog(deps.workspace, 1) : [];
    if (head?.message.startsWith("dream:") && head.message.includes(`\n\n${body}`)) {
      await deps.files.setDreamCursor(run.toCursor);
      return finish(`${head.message.split("\n")[0]!.slice("dream: ".length)} (commit ${head.sha.slice(0, 7)})`, head.sha);
    }
    const completed = run.completed ?? true;
    if ("problem" in found && completed) {
      await deps.files.setDreamCursor(run.toCursor);
      return finish(`digested history ${range} (the memory git history is unusable: ${found.problem}; nothing committed)`, null);
    }
    const record = await load();
    const runs = (record.unchanged?.fromCursor === run.fromCursor ? record.unchanged.runs : 0) + 1;
    if (runs >= MAX_UNCHANGED_RUNS) {
      await deps.files.setDreamCursor(run.toCursor);
      return finish(`no memory file changed in ${runs} runs; history ${range} taken as digested`, null);
    }
    const why = "problem" in found ? `${run.summary} (the memory git history is unusable: ${found.problem})` : `${completed ? "" : `${run.summary}; `}no memory file changed`;
    return finish(`${why}; history ${range} stays undigested and is offered again at the next run (${runs} of ${MAX_UNCHANGED_RUNS})`, null, { fromCursor: run.fromCursor, runs });
  }

  /** A whole run, resuming an interrupted one: what the daemon's actor does phase by phase, in one call. */
  async function runOnce(signal?: AbortSignal): Promise<string> {
    let run = await begin();
    if (!run) return (await load()).lastRun?.result ?? NOTHING_TO_DIGEST;
    if (run.phase === "analysing") run = await analyse(run, signal);
    if (run.phase === "editing") run = await edit(run, signal);
    return (await commit(run)).lastRun?.result ?? "done";
  }

  return { load, begin, analyse, edit, commit, runOnce, intervalMs };
}
export type Dream = ReturnType<typeof createDream>;
