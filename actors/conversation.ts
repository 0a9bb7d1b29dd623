import { randomUUID } from "node:crypto";
import type { Config } from "../src/config/schema.js";
import { runtimeContextBlock } from "../src/context/prompt.js";
import { createSystemPromptCache, type EarlySkills } from "../src/context/system-prompt-cache.js";
import { userMessageWithMedia } from "../src/context/media.js";
import { withMentionedSkills } from "../src/context/skills.js";
import { appendMessagesOps, getSessionMeta, newSessionMeta } from "../src/store/sessions.js";
import { blobRefs } from "../src/store/blobs.js";
import type { StoreOp } from "../src/store/store.js";
import type { TurnRecord } from "../src/store/turns.js";
import type { TurnInput } from "../machines/turn.machine.js";
import { createConsolidator } from "../src/memory/consolidator.js";
import type { DreamControl } from "../src/memory/commands.js";
import { createMemoryFiles } from "../src/memory/files.js";
import { historyWindow } from "../src/memory/fit.js";
import { fixedCost, inputBudget, messagesTokens, messagesTokensBound } from "../src/memory/tokens.js";
import type { ChatMessage, Usage } from "../src/providers/messages.js";
import { createCommands } from "./conversation-commands.js";
import { createTurnRuntime, type TurnDeps, type TurnFinalState, type TurnHandle, type TurnResult } from "./turn.js";

export interface IncomingMessage {
  sessionKey: string;
  channel: string;
  chatId: string;
  content: string;
  /** Attached files; images reach the model as image parts. */
  media?: string[];
}

export interface Reply {
  content: string;
  turnId?: string;
  state?: TurnFinalState;
  /** The `message` tool already wrote to the turn's chat (nanobot's _sent_in_turn). */
  alreadySent?: boolean;
  /** Runs once the answer is durable (in the outbox, the message out of the inbox): /restart's restart. */
  afterAnswer?: () => void;
}

export interface ConversationDeps extends TurnDeps {
  config: Config;
  env?: NodeJS.ProcessEnv;
  /** MCP servers: a new turn waits (bounded) for their first connection attempt, and hears of those not ready. */
  mcp?: { ready(): Promise<void>; note(): string | undefined };
  /** Dream, for /dream, /dream-log, /dream-restore and /dream-prompt (the daemon's actor, or run in process). */
  dream?: DreamControl;
  /** When this process started, for /status's uptime (default: when the conversation was created). */
  startedAt?: number;
  /** Sessions whose last usage /status shows after their actor ended (default LAST_USAGE_KEPT). */
  lastUsageKept?: number;
  /** The skills the system prompt's first build lists, when the caller started loading them early. */
  skillsLoading?: EarlySkills;
}

/** Sessions whose last turn's usage /status can still show once their actor has ended. */
export const LAST_USAGE_KEPT = 1_000;

/**
 * Time-ordered, unique turn ids. Time (sortable) and 8 random hex digits: a v4 UUID's first group, 32 random bits as randomBytes(4)
 * gave, from Node's batched UUID entropy (randomBytes took a synchronous entropy call per turn).
 */
export const newTurnId = (now: number) => `${now.toString(36).padStart(9, "0")}-${randomUUID().slice(0, 8)}`;


/**
 * A session's message handling: slash commands answered at once, everything else as a turn whose
 * user message is stored in the turn's first checkpoint and whose reply is appended atomically
 * with its last.
 */
export function createConversation(deps: ConversationDeps) {
  const now = deps.now ?? Date.now;
  const d0 = deps.config.agents.defaults;
  const budget = deps.contextBudget ?? inputBudget(d0.contextWindowTokens, d0.maxTokens);
  deps = { ...deps, contextBudget: budget, toolHintMaxLength: deps.toolHintMaxLength ?? d0.toolHintMaxLength };
  const files = createMemoryFiles(deps.workspace, { now, timezone: d0.timezone });
  const consolidator = createConsolidator({
    store: deps.store,
    provider: deps.provider,
    files,
    budget,
    fixedTokens: async (sessionKey) => fixedCost([(await systemPrompt()).promptFor(sessionKey)], deps.registry.schemas()),
    timezone: d0.timezone,
    logger: deps.logger,
    idleCompactAfterMinutes: d0.idleCompactAfterMinutes,
    now,
  });

  const promptCache = createSystemPromptCache({ config: deps.config, workspace: deps.workspace, files, env: deps.env, logger: deps.logger, now }, deps.skillsLoading);
  const systemPrompt = promptCache.get;

  /**
   * The session's last turn's usage (this process's, as nanobot's /status shows). It outlives the
   * session's actor (a /status after passivation still shows it) but is bounded: the sessions used
   * longest ago go first, so a daemon meeting many chats over weeks does not grow with them.
   */
  const lastUsage = new Map<string, Usage>();
  const rememberUsage = (sessionKey: string, usage: Usage) => {
    lastUsage.delete(sessionKey);
    lastUsage.set(sessionKey, usage);
    if (lastUsage.size > (deps.lastUsageKept ?? LAST_USAGE_KEPT)) lastUsage.delete(lastUsage.keys().next().value!);
  };
  const { command, onRestart } = createCommands(deps, { now, budget, consolidator, promptCache, lastUsage });

  /** What a turn's last batch adds to its session: its messages, usage and turn count. */
  async function sessionFinalOps(sessionKey: string, result: TurnResult): Promise<StoreOp[]> {
    rememberUsage(sessionKey, result.output.usage);
    const current = (await getSessionMeta(deps.store, sessionKey)) ?? newSessionMeta(sessionKey, now());
    // A failed turn ends with troupe's apology: the user is shown it, the model is never handed it as its own words.
    const apology = result.state === "failed" ? result.output.newMessages.length - 1 : -1;
    return appendMessagesOps(current, result.output.newMessages, result.turnId, now(), result.output.usage, true, (i) => i === apology).ops;
  }

  /** A new turn for a message: its input (system prompt, history, the message) and the ops that store the user message with its first checkpoint. */
  async function prepare(msg: IncomingMessage & { messageId?: string }): Promise<{ input: TurnInput; initialOps: StoreOp[] }> {
    const d = deps.config.agents.defaults;
    // Idle past idleCompactAfterMinutes, or over budget: the oldest messages are archived before the turn (nanobot's AutoCompact, Consolidator).
    // The session is read once, for the consolidation and the turn's history.
    const consolidated = await consolidator.consolidateAndView(msg.sessionKey).catch((err: unknown) => {
      deps.logger?.error({ err, sessionKey: msg.sessionKey }, "consolidation failed");
      return undefined;
    });
    if (consolidated?.rounds) promptCache.invalidate();
    const view = consolidated ? consolidated.view : await consolidator.view(msg.sessionKey);
    const meta = view?.meta ?? newSessionMeta(msg.sessionKey, now());
    const stored = view ? consolidator.unarchived(view) : { messages: [], seqOf: () => 0 };
    await deps.mcp?.ready();
    const mcpNote = deps.mcp?.note();
    const { promptFor, skills } = await systemPrompt();
    const basePrompt = promptFor(msg.sessionKey);
    const system = mcpNote ? `${basePrompt}\n\n${mcpNote}` : basePrompt;
    const turnId = newTurnId(now());
    const stamp = now();
    // `$skill-name` brings that skill's full text into this turn; the session stores the message as written.
    const userText = withMentionedSkills(msg.content, skills);
    // nanobot's runtime-context block heads the text in what the model is sent; the session stores the message as written.
    const context = runtimeContextBlock({ now: new Date(stamp), timezone: d.timezone, channel: msg.channel, chatId: msg.chatId });
    // Counted by the byte bound while that fits the budget; the tokenizer only near the window.
    const { history, estimate, exact } = historyWindow(
      stored.messages,
      budget,
      fixedCost([system, `${context}\n\n${userText}`], deps.registry.schemas()),
    );
    // The history is the tail of the stored messages: the turn's stored input refers to it, not a copy.
    const fromSeq = history.length ? stored.seqOf(stored.messages.length - history.length) : meta.nextSeq;
    started.set(msg.sessionKey, { estimate, exact });
    const { ops } = appendMessagesOps(meta, [{ role: "user", content: msg.content }], turnId, stamp);
    // The prompt is stored by content: its chunks not yet in the store go in the turn's first batch, with the input naming them.
    const blobs = await blobRefs(deps.store, system);
    return {
      input: {
        turnId,
        sessionKey: msg.sessionKey,
        channel: msg.channel,
        chatId: msg.chatId,
        messages: [{ role: "system", content: system }, ...history, await userMessageWithMedia(userText, msg.media, context)],
        maxIterations: d.maxToolIterations,
        ...(msg.messageId ? { messageId: msg.messageId } : {}),
        history: { epoch: meta.epoch, fromSeq, toSeq: meta.nextSeq, count: history.length },
        systemBlobs: blobs.refs,
      },
      initialOps: [...blobs.ops, ...ops],
    };
  }

  /** Turns run in this process (the in-process agent); their final batch appends them to the session. */
  const turns = createTurnRuntime(deps, (result, input) => sessionFinalOps(input.sessionKey, result));
  const withExtra = (extra: (result: TurnResult) => StoreOp[]) => async (result: TurnResult, input: TurnInput) => [
    ...(await sessionFinalOps(input.sessionKey, result)),
    ...extra(result),
  ];

  async function begin(msg: IncomingMessage & { messageId?: string }, extraFinalOps: (result: TurnResult) => StoreOp[] = () => []): Promise<TurnHandle> {
    return turns.start(await prepare(msg), withExtra(extraFinalOps));
  }

  /** Continues a turn from its last checkpoint (troupe stopped mid-turn); it ends like any other. */
  function resume(record: TurnRecord, extraFinalOps: (result: TurnResult) => StoreOp[] = () => []): TurnHandle {
    return turns.start({ record }, withExtra(extraFinalOps));
  }

  /** The prompt estimate each session's turn started with (system, unarchived history, user message). */
  const started = new Map<string, { estimate: number; exact: boolean }>();

  /**
   * After a turn: consolidation in the background when the session is over budget. The estimate the
   * turn started with plus what it added says so without reading the store; a turn resumed after a
   * restart has none, and the session is read.
   */
  function afterTurn(sessionKey: string, added?: ChatMessage[]): void {
    const before = started.get(sessionKey);
    started.delete(sessionKey);
    if (before !== undefined && added && before.estimate + (before.exact ? messagesTokens : messagesTokensBound)(added) < budget) return;
    void consolidator.maybeConsolidate(sessionKey).then(
      (n) => void (n && promptCache.invalidate()),
      (err: unknown) => deps.logger?.error({ err, sessionKey }, "background consolidation failed"),
    );
  }

  return {
    /** A slash command's answer (/help, /new, /status, /restart), or undefined for a message that needs a turn. */
    command,
    /** How /restart restarts (the daemon's); without it /restart says it cannot. */
    onRestart,
    /** Starts a turn for the message; `extraFinalOps` join the turn's final atomic batch (the reply's outbox entry). */
    begin,
    prepare,
    sessionFinalOps,
    resume,
    afterTurn,
    /** A session's actor ended (passivated, crashed): what was kept of its history goes; the next start reads it again. */
    forget: (sessionKey: string) => {
      consolidator.forget(sessionKey);
      // A turn that failed (its checkpoint could not be written) never reached afterTurn.
      started.delete(sessionKey);
    },
    /** How many entries the per-session maps hold (tests and the soak bench check they are let go). */
    held: () => ({ lastUsage: lastUsage.size, started: started.size, consolidator: consolidator.held() }),
    consolidator,
    memory: files,
    /** Handles one message; `onTurn` gets the running turn's handle (to cancel or inject). */
    async handle(msg: IncomingMessage, onTurn?: (turn: TurnHandle) => void): Promise<Reply> {
      const answered = await command(msg);
      if (answered) return answered;
      const turn = await begin(msg);
      onTurn?.(turn);
      const result = await turn.done;
      afterTurn(msg.sessionKey, result.output.newMessages);
      return { content: result.output.reply, turnId: result.turnId, state: result.state, ...(result.output.replySent ? { alreadySent: true } : {}) };
    },
  };
}
export type Conversation = ReturnType<typeof createConversation>;
