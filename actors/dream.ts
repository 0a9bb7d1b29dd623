import { existsSync } from "node:fs";
import { join } from "node:path";
import { fromPromise, waitFor, type AnyActorRef } from "xstate";
import { dreamMachine, type DreamContext } from "../machines/dream.machine.js";
import type { DreamControl } from "../src/memory/commands.js";
import type { Dream } from "../src/memory/dream.js";
import type { DreamRecord, DreamRun } from "../src/memory/dream-record.js";
import { dreamPromptCommand } from "../src/memory/dream-prompt.js";
import { commitDiff, memoryLog, restoreMemory } from "../src/memory/git.js";
import { historyTimestamp } from "../src/memory/history-entry.js";

/** The Dream machine with its phases supplied: the supervisor's `dream` child. */
export function createDreamLogic(dream: Dream) {
  return dreamMachine.provide({
    actors: {
      load: fromPromise<DreamRecord>(() => dream.load()),
      begin: fromPromise<DreamRun | undefined>(() => dream.begin()),
      analyse: fromPromise<DreamRun, DreamRun>(({ input, signal }) => dream.analyse(input, signal)),
      edit: fromPromise<DreamRun, DreamRun>(({ input, signal }) => dream.edit(input, signal)),
      commit: fromPromise<DreamRecord, DreamRun>(({ input }) => dream.commit(input)),
    },
  });
}

const stamp = (seconds: number) => historyTimestamp(new Date(seconds * 1000));
const PROMPT_HINT = "Use `/dream-prompt` to see or change how Dream organizes memory.";
const NOT_RUN_YET = `Dream has not run yet. Run \`/dream\`, or wait for its next scheduled run.\n\n${PROMPT_HINT}`;

/** /dream-restore without a sha: the Dream versions to choose from (nanobot's list), newest first. */
async function restoreChoices(workspace: string): Promise<string> {
  if (!existsSync(join(workspace, ".git"))) return NOT_RUN_YET;
  const versions = (await memoryLog(workspace, 50)).filter((c) => c.message.startsWith("dream:")).slice(0, 10);
  if (!versions.length) return `Dream memory has no saved versions to restore yet: no Dream run has changed a memory file.\n\n${PROMPT_HINT}`;
  return [
    "## Dream Restore",
    "",
    "Choose a Dream memory version to restore. Latest first:",
    "",
    ...versions.map((c) => `- \`${c.sha.slice(0, 7)}\` ${stamp(c.timestamp)} - ${c.message.split("\n")[0]}`),
    "",
    "Preview a version with `/dream-log <sha>` before restoring it.",
    "Restore a version with `/dream-restore <sha>`: SOUL.md, USER.md and memory/MEMORY.md go back to how that version left them, as a new commit.",
  ].join("\n");
}

/** /dream-log, /dream-restore (the memory's git history) and /dream-prompt: the same in every process. */
export function memoryHistoryCommands(workspace: string, now: () => number = Date.now): Pick<DreamControl, "log" | "restore" | "prompt"> {
  return {
    prompt: (arg) => dreamPromptCommand(workspace, arg),
    async log(sha) {
      if (!sha && !existsSync(join(workspace, ".git"))) return NOT_RUN_YET;
      if (sha) {
        const { commit, diff } = await commitDiff(workspace, sha);
        return [`${commit.sha.slice(0, 7)}  ${stamp(commit.timestamp)}`, commit.message, "", diff || "(no change to the memory files)"].join("\n");
      }
      const commits = await memoryLog(workspace, 10);
      if (!commits.length) return NOT_RUN_YET;
      return ["Recent memory commits (newest first; /dream-log <sha> shows one):", ...commits.map((c) => `${c.sha.slice(0, 7)}  ${stamp(c.timestamp)}  ${c.message.split("\n")[0]}`)].join("\n");
    },
    async restore(sha) {
      if (!sha) return restoreChoices(workspace);
      const { from, sha: made } = await restoreMemory(workspace, sha, now);
      return made
        ? `Restored SOUL.md, USER.md and memory/MEMORY.md as of ${from.slice(0, 7)} (new commit ${made.slice(0, 7)}).`
        : `SOUL.md, USER.md and memory/MEMORY.md are already as of ${from.slice(0, 7)}; nothing to restore.`;
    },
  };
}

/** /dream and friends against the daemon's Dream actor: /dream sends `run` and answers when the run ends. */
export function actorDreamControl(ref: () => AnyActorRef | undefined, workspace: string, timeoutMs = 30 * 60_000): DreamControl {
  return {
    ...memoryHistoryCommands(workspace),
    async run() {
      const actor = ref();
      if (!actor) return "Dream is not running (agents.defaults.dream.enabled is false, or it failed; see troupe status).";
      const before = (actor.getSnapshot().context as DreamContext).runs;
      actor.send({ type: "run" });
      const done = await waitFor(actor, (s) => (s.context as DreamContext).runs > before, { timeout: timeoutMs });
      return (done.context as DreamContext).lastResult ?? "done";
    },
  };
}

/** /dream and friends in a process without the daemon's actor (troupe agent, troupe dream run). */
export function directDreamControl(dream: Dream, workspace: string): DreamControl {
  return { ...memoryHistoryCommands(workspace), run: () => dream.runOnce() };
}
