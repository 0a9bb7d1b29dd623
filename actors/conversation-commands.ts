import type { TimedCache } from "../src/context/prompt-cache.js";
import type { SystemPrompt } from "../src/context/system-prompt-cache.js";
import { getSessionMeta, newEpochOps, newSessionMeta, sessionMessages } from "../src/store/sessions.js";
import type { Consolidator } from "../src/memory/consolidator.js";
import { dreamCommand } from "../src/memory/commands.js";
import type { Usage } from "../src/providers/messages.js";
import { statusText } from "../src/chat-status.js";
import { historyAnswer, skillsAnswer } from "../src/chat-lists.js";
import type { RestartOrigin } from "../src/restart-origin.js";
import { isFinished, listSubagents } from "../src/store/subagents.js";
import { VERSION } from "../src/version.js";
import type { ConversationDeps, IncomingMessage, Reply } from "./conversation.js";

export const HELP_TEXT = [
  "troupe commands:",
  "/new — start a new conversation (the old one is kept)",
  "/status — version, model, last usage, context, messages, uptime, running tasks and cron jobs",
  "/history [n] — the last n messages of this conversation (10; at most 50)",
  "/skill — the skills the agent has",
  "/restart — restart the daemon (interrupted work resumes)",
  "/stop — cancel the running turn",
  "/dream — digest recent history into memory now",
  "/dream-log [sha] — recent Dream changes, or one with its diff",
  "/dream-restore [sha] — the Dream versions to choose from, or put the memory files back as they were at one",
  "/dream-prompt [init] — which instructions Dream follows; init makes an editable copy (prompts/dream.md)",
  "/help — this list",
].join("\n");

/** What the commands share with the rest of the conversation (made once, by createConversation). */
export interface CommandsScope {
  now: () => number;
  /** The input budget (/status's context line). */
  budget: number;
  consolidator: Consolidator;
  promptCache: TimedCache<SystemPrompt>;
  /** The sessions' last usage, which the conversation's final ops keep. */
  lastUsage: Map<string, Usage>;
}

/** A conversation's slash commands (/help, /new, /dream…, /status, /history, /skill, /restart). */
export function createCommands(deps: ConversationDeps, { now, budget, consolidator, promptCache, lastUsage }: CommandsScope) {
  const d0 = deps.config.agents.defaults;
  const systemPrompt = promptCache.get;

  /** Set by the daemon: /restart calls it once its answer is durable. */
  let restartHook: ((from: RestartOrigin) => void) | undefined;
  const startedAt = deps.startedAt ?? now();

  async function status(sessionKey: string, busy: boolean): Promise<string> {
    const [meta, c, subagents, jobs] = await Promise.all([
      getSessionMeta(deps.store, sessionKey),
      consolidator.status(sessionKey),
      listSubagents(deps.store),
      // Imported here: only /status reads the cron jobs (a turn never does, nor `troupe agent -m`'s start).
      import("../src/cron/jobs.js").then((m) => m.listJobs(deps.store, { onCorrupt: () => {} })),
    ]);
    const enabled = jobs.filter((j) => j.enabled && !j.system);
    const next = enabled.map((j) => j.nextRunAt).filter((t): t is number => t !== null);
    return statusText({
      version: VERSION,
      model: deps.provider.model,
      startedAt,
      now: now(),
      lastUsage: lastUsage.get(sessionKey),
      contextWindowTokens: d0.contextWindowTokens,
      inputBudget: budget,
      contextEstimate: c.estimated,
      sessionKey,
      messages: c.messages,
      consolidated: c.lastConsolidated,
      turns: meta?.turns ?? 0,
      totalTokens: meta?.usage.totalTokens ?? 0,
      busy,
      subagents: subagents.filter((s) => s.origin.sessionKey === sessionKey && !isFinished(s)).length,
      cron: { jobs: enabled.length, nextRunAt: next.length ? Math.min(...next) : null },
    });
  }

  async function command(msg: IncomingMessage, opts: { busy?: boolean } = {}): Promise<Reply | undefined> {
    const word = msg.content.trim().split(/\s+/)[0]?.toLowerCase();
    if (word === "/help") return { content: HELP_TEXT };
    if (word === "/new") {
      // The unarchived tail goes to history.jsonl first; a crash in between redoes only what is not written.
      const archived = await consolidator.archiveTail(msg.sessionKey);
      promptCache.invalidate();
      const meta = (await getSessionMeta(deps.store, msg.sessionKey)) ?? newSessionMeta(msg.sessionKey, now());
      await deps.store.batch(newEpochOps(meta, now()).ops, { sync: true });
      return { content: archived ? `New session started; ${archived} message(s) archived to memory.` : "New session started." };
    }
    if (word?.startsWith("/dream")) {
      const answer = await dreamCommand(deps.dream, msg.content);
      if (answer !== undefined) {
        promptCache.invalidate();
        return { content: answer };
      }
    }
    if (word === "/status") return { content: await status(msg.sessionKey, opts.busy ?? false) };
    if (word === "/history") {
      const meta = await getSessionMeta(deps.store, msg.sessionKey);
      const messages = meta ? (await sessionMessages(deps.store, meta)).map((m) => m.message) : [];
      return { content: historyAnswer(messages, msg.content.trim().slice(word.length)) };
    }
    if (word === "/skill") return { content: skillsAnswer((await systemPrompt()).skills) };
    if (word === "/restart") {
      const restart = restartHook;
      // Only the daemon restarts itself; a chat run in this process has nothing to restart.
      if (!restart) return { content: "/restart restarts the daemon (troupe gateway); this chat runs in its own process: exit it and start it again." };
      deps.logger?.info({ sessionKey: msg.sessionKey }, "restart requested");
      const from = { sessionKey: msg.sessionKey, channel: msg.channel, chatId: msg.chatId, at: now() };
      return { content: `Restarting…${opts.busy ? " The running turn continues after the restart." : ""}`, afterAnswer: () => restart(from) };
    }
    return undefined;
  }

  return {
    command,
    onRestart(hook: (from: RestartOrigin) => void) {
      restartHook = hook;
    },
  };
}
