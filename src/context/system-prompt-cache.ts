import type { Logger } from "pino";
import type { Config } from "../config/schema.js";
import type { MemoryFiles } from "../memory/files.js";
import type { HistoryEntry } from "../memory/history-entry.js";
import { recentFor } from "../memory/recent.js";
import { buildSystemPrompt, withRecentHistory } from "./prompt.js";
import { createTimedCache, type TimedCache } from "./prompt-cache.js";
import { loadSkills, type Skill } from "./skills.js";

export interface SystemPrompt {
  /** The prompt a turn of this session is sent: the shared part and the session's own Recent History. */
  promptFor(sessionKey: string): string;
  skills: Skill[];
}

/** Sessions whose prompt one build keeps made (it lives PROMPT_TTL_MS; more is only a busier daemon's wave). */
const SESSIONS_KEPT = 256;

/**
 * The prompt of one build: `base` (everything but history) is shared; each session's Recent History
 * is added at its first request, from the undigested entries read once for all, and kept, so a
 * session's turns within a build get the same string.
 */
function perSession(base: string, skills: Skill[], undigested: HistoryEntry[]): SystemPrompt {
  const made = new Map<string, string>();
  return {
    skills,
    promptFor(sessionKey) {
      let prompt = made.get(sessionKey);
      if (prompt === undefined) {
        prompt = withRecentHistory(base, recentFor(undigested, sessionKey));
        if (made.size >= SESSIONS_KEPT) made.clear();
        made.set(sessionKey, prompt);
      }
      return prompt;
    },
  };
}

/** How long a built system prompt is reused (edits to the files it reads show up within that). */
export const PROMPT_TTL_MS = 2_000;

export interface SystemPromptDeps {
  config: Config;
  workspace: string;
  files: MemoryFiles;
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
  now: () => number;
}

/** The skills the prompt lists: the workspace's and the built-in ones, as configured. */
export function promptSkills(deps: Pick<SystemPromptDeps, "config" | "workspace" | "env" | "logger">): Promise<Skill[]> {
  return loadSkills(deps.workspace, deps.env, {
    disabled: deps.config.agents.defaults.disabledSkills,
    onWarning: (warning) => deps.logger?.warn(`skill: ${warning}`),
  });
}

/** Skills a caller started loading early, and when (its `now`). */
export interface EarlySkills {
  skills: Promise<Skill[]>;
  at: number;
}

/**
 * The system prompt (bootstrap files, every skill, each session's recent history), built from the workspace alone:
 * no store. Reading the files and parsing every skill costs about a millisecond a turn; under load
 * that adds up, so it is rebuilt at most every PROMPT_TTL_MS, in the background from half of it on,
 * so no turn waits for the files (prompt-cache.ts). `early`: skills the caller started loading before
 * the cache existed (`troupe agent` does while its store opens); its first build takes them if they
 * are no older than PROMPT_TTL_MS then (a daemon's first message may come hours after its start),
 * and loads them afresh if that load failed.
 */
export function createSystemPromptCache(deps: SystemPromptDeps, early?: EarlySkills): TimedCache<SystemPrompt> {
  let first = early;
  const skillsNow = (): Promise<Skill[]> => {
    const taken = first;
    first = undefined;
    if (!taken || deps.now() - taken.at > PROMPT_TTL_MS) return promptSkills(deps);
    return taken.skills.catch(() => promptSkills(deps));
  };
  return createTimedCache(
    async () => {
      const skills = await skillsNow();
      const [base, undigested] = await Promise.all([
        buildSystemPrompt({ workspace: deps.workspace, skills, restrictToWorkspace: deps.config.tools.restrictToWorkspace }),
        deps.files.undigested(),
      ]);
      return perSession(base, skills, undigested);
    },
    { ttlMs: PROMPT_TTL_MS, now: deps.now },
  );
}
