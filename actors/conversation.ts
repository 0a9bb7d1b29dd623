import { randomBytes } from "node:crypto";
import type { Config } from "../src/config/schema.js";
import { buildSystemPrompt, withRuntimeContext } from "../src/context/prompt.js";
import { userMessageWithMedia } from "../src/context/media.js";
import { loadSkills } from "../src/context/skills.js";
import {
  appendMessagesOps,
  getSessionMeta,
  historyWindow,
  newEpochOps,
  newSessionMeta,
  sessionMessagesWithSeq,
} from "../src/store/sessions.js";
import type { StoreOp } from "../src/store/store.js";
import type { TurnRecord } from "../src/store/turns.js";
import type { TurnInput } from "../machines/turn.machine.js";
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
}

export interface ConversationDeps extends TurnDeps {
  config: Config;
  env?: NodeJS.ProcessEnv;
}

export const HELP_TEXT = [
  "troupe commands:",
  "/new — start a new conversation (the old one is kept)",
  "/status — this session's turns and token usage",
  "/stop — cancel the running turn",
  "/help — this list",
].join("\n");

/** How long a built system prompt is reused. */
export const PROMPT_TTL_MS = 2_000;

/** Time-ordered, unique turn ids. */
export const newTurnId = (now: number) => `${now.toString(36).padStart(9, "0")}-${randomBytes(4).toString("hex")}`;

/** Characters of history to send: the context window less the reply, at ~3 chars a token. */
const historyBudget = (config: Config) =>
  Math.max(4_000, (config.agents.defaults.contextWindowTokens - config.agents.defaults.maxTokens) * 3);

/**
 * A session's message handling: slash commands answered at once, everything else as a turn whose
 * user message is stored in the turn's first checkpoint and whose reply is appended atomically
 * with its last.
 */
export function createConversation(deps: ConversationDeps) {
  const now = deps.now ?? Date.now;

  // Reading the bootstrap files and parsing every skill costs about a millisecond a turn; under load
  // that adds up, so the prompt is rebuilt at most every PROMPT_TTL_MS (edits show up within that).
  let cachedPrompt: { text: Promise<string>; at: number } | undefined;
  function systemPrompt(): Promise<string> {
    if (cachedPrompt && now() - cachedPrompt.at < PROMPT_TTL_MS) return cachedPrompt.text;
    const text = (async () =>
      buildSystemPrompt({
        workspace: deps.workspace,
        skills: await loadSkills(deps.workspace, deps.env),
        restrictToWorkspace: deps.config.tools.restrictToWorkspace,
      }))();
    cachedPrompt = { text, at: now() };
    text.catch(() => (cachedPrompt = undefined));
    return text;
  }

  async function command(msg: IncomingMessage): Promise<Reply | undefined> {
    const word = msg.content.trim().split(/\s+/)[0]?.toLowerCase();
    if (word === "/help") return { content: HELP_TEXT };
    if (word === "/new") {
      const meta = (await getSessionMeta(deps.store, msg.sessionKey)) ?? newSessionMeta(msg.sessionKey, now());
      await deps.store.batch(newEpochOps(meta, now()).ops, { sync: true });
      return { content: "New session started." };
    }
    if (word === "/status") {
      const meta = await getSessionMeta(deps.store, msg.sessionKey);
      const u = meta?.usage;
      return {
        content: meta
          ? `Session ${meta.key}: ${meta.turns} turn(s), ${u?.totalTokens ?? 0} tokens (${u?.promptTokens ?? 0} prompt, ${u?.completionTokens ?? 0} completion). Model: ${deps.provider.model}.`
          : `Session ${msg.sessionKey}: no turns yet. Model: ${deps.provider.model}.`,
      };
    }
    return undefined;
  }

  /** What a turn's last batch adds to its session: its messages, usage and turn count. */
  async function sessionFinalOps(sessionKey: string, result: TurnResult): Promise<StoreOp[]> {
    const current = (await getSessionMeta(deps.store, sessionKey)) ?? newSessionMeta(sessionKey, now());
    // A failed turn ends with troupe's apology: the user is shown it, the model is never handed it as its own words.
    const apology = result.state === "failed" ? result.output.newMessages.length - 1 : -1;
    return appendMessagesOps(current, result.output.newMessages, result.turnId, now(), result.output.usage, true, (i) => i === apology).ops;
  }

  /** A new turn for a message: its input (system prompt, history, the message) and the ops that store the user message with its first checkpoint. */
  async function prepare(msg: IncomingMessage & { messageId?: string }): Promise<{ input: TurnInput; initialOps: StoreOp[] }> {
    const d = deps.config.agents.defaults;
    const meta = (await getSessionMeta(deps.store, msg.sessionKey)) ?? newSessionMeta(msg.sessionKey, now());
    const stored = (await sessionMessagesWithSeq(deps.store, meta)).filter((m) => !m.shownOnly);
    const history = historyWindow(stored.map((m) => m.message), historyBudget(deps.config));
    // The history is the tail of the stored messages: the turn's stored input refers to it, not a copy.
    const fromSeq = history.length ? stored[stored.length - history.length]!.seq : meta.nextSeq;
    const system = await systemPrompt();
    const turnId = newTurnId(now());
    const stamp = now();
    const userForModel = withRuntimeContext(msg.content, { now: new Date(stamp), timezone: d.timezone, channel: msg.channel, chatId: msg.chatId });
    const { ops } = appendMessagesOps(meta, [{ role: "user", content: msg.content }], turnId, stamp);
    return {
      input: {
        turnId,
        sessionKey: msg.sessionKey,
        channel: msg.channel,
        chatId: msg.chatId,
        messages: [{ role: "system", content: system }, ...history, await userMessageWithMedia(userForModel, msg.media)],
        maxIterations: d.maxToolIterations,
        ...(msg.messageId ? { messageId: msg.messageId } : {}),
        history: { epoch: meta.epoch, fromSeq, toSeq: meta.nextSeq, count: history.length },
      },
      initialOps: ops,
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

  return {
    /** A slash command's answer (/help, /new, /status), or undefined for a message that needs a turn. */
    command,
    /** Starts a turn for the message; `extraFinalOps` join the turn's final atomic batch (the reply's outbox entry). */
    begin,
    prepare,
    sessionFinalOps,
    resume,
    /** Handles one message; `onTurn` gets the running turn's handle (to cancel or inject). */
    async handle(msg: IncomingMessage, onTurn?: (turn: TurnHandle) => void): Promise<Reply> {
      const answered = await command(msg);
      if (answered) return answered;
      const turn = await begin(msg);
      onTurn?.(turn);
      const result = await turn.done;
      return { content: result.output.reply, turnId: result.turnId, state: result.state };
    },
  };
}
export type Conversation = ReturnType<typeof createConversation>;
