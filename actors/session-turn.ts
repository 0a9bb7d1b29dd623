import type { AnyActorRef } from "xstate";
import type { Logger } from "pino";
import type { Bus } from "../src/bus/index.js";
import { inboxDeleteOps } from "../src/store/inbox.js";
import { announce, outboxPutOp, queueDelivery, type OutboxRecord } from "../src/store/outbox.js";
import type { Store, StoreOp } from "../src/store/store.js";
import { getTurn } from "../src/store/turns.js";
import type { PreparedTurn, PrepareTurnInput, SessionEvent } from "../machines/session.machine.js";
import type { TurnOutput } from "../machines/turn.machine.js";
import type { Conversation } from "./conversation.js";
import { tellSession } from "./load-session.js";
import { createTurnRuntime, type TurnDeps, type TurnResult } from "./turn.js";

export interface SessionTurnDeps extends TurnDeps {
  conversation: Conversation;
  store: Store;
  bus?: Bus;
  logger?: Logger;
  /**
   * More ops for a turn's final batch, given the inbound messages it answers (a cron run records how
   * it ended there, atomically with its reply); `deliver: false` keeps the reply out of the outbox.
   */
  finalHook?: (result: TurnResult, answers: string[]) => Promise<{ ops: StoreOp[]; deliver: boolean }>;
  /** Waits (bounded) for the tools a resumed turn may need: MCP servers' first connection attempt. */
  toolsReady?: () => Promise<void>;
}

/**
 * Channels whose every message is answered on the request that brought it (the control API's
 * POST stream): their reply is the answer, sent even when the `message` tool wrote to the chat.
 */
const ANSWERING_CHANNELS = new Set(["api"]);

/** The `message` tool already wrote to the turn's chat: the reply is not sent a second time (nanobot's _sent_in_turn). */
export const skipReply = (channel: string, output: Pick<TurnOutput, "replySent">) => Boolean(output.replySent) && !ANSWERING_CHANNELS.has(channel);

/** A reply on a chat, as an outbox entry. */
export function replyRecord(to: { channel: string; chatId: string }, content: string, deliveryId: string, answers: string[], now: number): OutboxRecord {
  return { deliveryId, channel: to.channel, chatId: to.chatId, content, media: [], answers, createdAt: now, attempts: 0 };
}

/**
 * What a session needs to run its turns: `prepareTurn` answers a queued command (/new) or builds the
 * turn for a message (or loads the interrupted one); `turn` is the checkpointed turn machine the
 * session invokes as its child; `watchTurn` waits for the turn's final batch, which puts the reply
 * in the outbox and takes the messages it answers out of the inbox atomically, then announces the
 * reply and tells the session.
 */
export function createSessionTurns(deps: SessionTurnDeps) {
  const now = deps.now ?? Date.now;
  /** Replies written in a final batch, announced once that batch is durable. */
  const replies = new Map<string, OutboxRecord>();
  const turns = createTurnRuntime(deps, async (result, input) => {
    const answers = [...(input.messageId ? [input.messageId] : []), ...result.output.takenIds];
    const reply = replyRecord(input, result.output.reply, `reply:${result.turnId}`, answers, now());
    if (result.output.replySent) reply.alreadySent = true;
    const hook = (await deps.finalHook?.(result, answers)) ?? { ops: [], deliver: true };
    // A reply the message tool already sent (alreadySent) still goes to its channel, which does not
    // send it again but learns the messages it answers are answered (Telegram takes its reaction back).
    const deliver = hook.deliver;
    const ops = [
      ...(await deps.conversation.sessionFinalOps(input.sessionKey, result)),
      ...(deliver ? [outboxPutOp(reply)] : []),
      ...inboxDeleteOps(input.sessionKey, answers),
      ...hook.ops,
    ];
    if (deliver) replies.set(result.turnId, reply);
    return ops;
  });

  async function prepare(input: PrepareTurnInput): Promise<PreparedTurn> {
    const key = input.sessionKey;
    if (input.resumeTurnId) {
      const record = await getTurn(deps.store, input.resumeTurnId);
      if (!record || record.final) return { start: null };
      // Its journal decides by the tool's annotations whether an interrupted MCP call is re-run: the tool must be known.
      await deps.toolsReady?.();
      deps.logger?.info({ sessionKey: key, turnId: record.turnId, state: record.state }, "resuming an interrupted turn");
      return { start: { record }, turnId: record.turnId };
    }
    const first = input.message!;
    const incoming = { sessionKey: key, channel: first.channel, chatId: first.chatId, content: first.content, messageId: first.id, media: first.media };
    const answered = await deps.conversation.command(incoming);
    if (answered) {
      await queueDelivery(deps.store, deps.bus, replyRecord(first, answered.content, `reply:${first.id}`, [first.id], now()), inboxDeleteOps(key, [first.id]));
      answered.afterAnswer?.();
      return { start: null };
    }
    const start = await deps.conversation.prepare(incoming);
    return { start, turnId: start.input.turnId };
  }

  /**
   * The session's `prepareTurn` action: prepares, then sends the session `turn.prepared` (or
   * `turn.unprepared`). An action and an event, not an invoked actor per turn.
   */
  const prepareTurn = ({ self }: { self: AnyActorRef }, input: PrepareTurnInput) =>
    void prepare(input).then(
      (prepared) => tellSession(self, { type: "turn.prepared", prepared }),
      (error: unknown) => tellSession(self, { type: "turn.unprepared", error }),
    );

  /**
   * The session's `watchTurn` action: once the turn's final batch is durable its reply is announced
   * and the session told (`turn.settled`); a checkpoint that could not be written is `turn.failed`.
   */
  const watchTurn = ({ self }: { self: AnyActorRef }, { sessionKey, turnId }: { sessionKey: string; turnId: string }) => {
    // The session may have ended meanwhile (stopped at shutdown): nothing is sent to it then.
    const tell = (event: SessionEvent) => tellSession(self, event);
    turns.settled(turnId).then(
      (result) => {
        const reply = replies.get(turnId);
        replies.delete(turnId);
        if (reply) announce(deps.bus, reply);
        deps.conversation.afterTurn(sessionKey, result.output.newMessages);
        tell({ type: "turn.settled", turnId, output: result.output });
      },
      (err: unknown) => {
        // The final batch was not written: its reply is not in the outbox (the turn resumes from its last checkpoint and writes its own).
        replies.delete(turnId);
        tell({ type: "turn.failed", turnId, error: err instanceof Error ? err.message : String(err) });
      },
    );
  };

  /** How many replies wait for their final batch (tests check a failed turn's is let go). */
  const held = () => ({ replies: replies.size });

  return { prepareTurn, prepare, turn: turns.logic, watchTurn, turns, held };
}
