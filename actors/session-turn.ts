import { fromCallback } from "xstate";
import type { Logger } from "pino";
import type { Bus } from "../src/bus/index.js";
import { inboxDeleteOps } from "../src/store/inbox.js";
import { announce, outboxPutOp, queueDelivery, type OutboxRecord } from "../src/store/outbox.js";
import type { Store, StoreOp } from "../src/store/store.js";
import { getTurn } from "../src/store/turns.js";
import type { RunTurnEvent, RunTurnInput, SessionEvent, SessionMessage } from "../machines/session.machine.js";
import type { TurnInput } from "../machines/turn.machine.js";
import type { Conversation } from "./conversation.js";
import type { TurnHandle, TurnResult } from "./turn.js";

export interface SessionTurnDeps {
  conversation: Conversation;
  store: Store;
  bus?: Bus;
  logger?: Logger;
  now?: () => number;
  /** Turns running now, for a graceful shutdown. */
  running: Set<TurnHandle>;
}

/** A reply on a chat, as an outbox entry. */
export function replyRecord(to: { channel: string; chatId: string }, content: string, deliveryId: string, answers: string[], now: number): OutboxRecord {
  return { deliveryId, channel: to.channel, chatId: to.chatId, content, media: [], answers, createdAt: now, attempts: 0 };
}

/**
 * Runs one unit of a session's work: a queued command (/new), a new turn for a message, or an
 * interrupted turn resumed from its checkpoint. Injected messages go into the running turn. The
 * reply enters the outbox, and the messages it answers leave the inbox, in the turn's final atomic
 * batch; the reply is announced once that batch is durable.
 */
export function createSessionTurn(deps: SessionTurnDeps) {
  const now = deps.now ?? Date.now;
  return fromCallback<RunTurnEvent, RunTurnInput>(({ input, receive, sendBack }) => {
    const key = input.sessionKey;
    const injected: SessionMessage[] = [];
    let handle: TurnHandle | undefined;
    let cancelled = false;
    const finish = (taken: number) => sendBack({ type: "turn.finished", taken } satisfies SessionEvent);

    receive((event) => {
      if (event.type === "cancel") {
        cancelled = true;
        handle?.cancel();
        return;
      }
      injected.push(event.message);
      handle?.inject(event.message.content, event.message.id);
    });

    /** Runs a started turn to its end; its final batch carries the reply and the inbox removal. */
    async function run(start: (finalOps: (result: TurnResult) => StoreOp[]) => Promise<TurnHandle> | TurnHandle, to: { channel: string; chatId: string }, firstId?: string) {
      let reply: OutboxRecord | undefined;
      const turn = await start((result) => {
        const answers = [...(firstId ? [firstId] : []), ...result.output.takenIds];
        reply = replyRecord(to, result.output.reply, `reply:${result.turnId}`, answers, now());
        return [outboxPutOp(reply), ...inboxDeleteOps(key, answers)];
      });
      handle = turn;
      deps.running.add(turn);
      // Messages that arrived while the turn was being set up.
      for (const m of injected) turn.inject(m.content, m.id);
      if (cancelled) turn.cancel();
      try {
        const result = await turn.done;
        if (reply) announce(deps.bus, reply);
        finish(result.output.injectedTaken);
      } finally {
        deps.running.delete(turn);
      }
    }

    void (async () => {
      if (input.resumeTurnId) {
        const record = await getTurn(deps.store, input.resumeTurnId);
        if (!record || record.final) return finish(0);
        const turnInput = record.input as TurnInput;
        deps.logger?.info({ sessionKey: key, turnId: record.turnId, state: record.state }, "resuming an interrupted turn");
        return run((finalOps) => deps.conversation.resume(record, finalOps), turnInput, turnInput.messageId);
      }
      const first = input.message!;
      const incoming = { sessionKey: key, channel: first.channel, chatId: first.chatId, content: first.content, messageId: first.id, media: first.media };
      const answered = await deps.conversation.command(incoming);
      if (answered) {
        await queueDelivery(deps.store, deps.bus, replyRecord(first, answered.content, `reply:${first.id}`, [first.id], now()), inboxDeleteOps(key, [first.id]));
        return finish(0);
      }
      return run((finalOps) => deps.conversation.begin(incoming, finalOps), first, first.id);
    })().catch(async (err: unknown) => {
      deps.logger?.error({ err, sessionKey: key }, "turn failed outside the turn machine");
      const first = input.message;
      if (first) {
        const text = `Sorry, something went wrong: ${err instanceof Error ? err.message : String(err)}`;
        await queueDelivery(deps.store, deps.bus, replyRecord(first, text, `error:${first.id}`, [first.id], now()), inboxDeleteOps(key, [first.id])).catch(() => undefined);
      }
      finish(0);
    });
  });
}
