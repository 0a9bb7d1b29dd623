import { fromCallback } from "xstate";
import type { Logger } from "pino";
import type { Bus } from "../src/bus/index.js";
import { announce, outboxPutOp, queueDelivery, type OutboxRecord } from "../src/store/outbox.js";
import type { Store } from "../src/store/store.js";
import type { RunTurnEvent, RunTurnInput, SessionEvent, SessionMessage } from "../machines/session.machine.js";
import type { Conversation } from "./conversation.js";
import type { TurnHandle } from "./turn.js";

export interface SessionTurnDeps {
  conversation: Conversation;
  store: Store;
  bus?: Bus;
  logger?: Logger;
  now?: () => number;
  /** Turns running now, for a graceful shutdown. */
  running: Set<TurnHandle>;
}

/** A reply to a message, as an outbox entry for the message's channel. */
export function replyRecord(to: SessionMessage, content: string, deliveryId: string, answers: string[], now: number): OutboxRecord {
  return { deliveryId, channel: to.channel, chatId: to.chatId, content, media: [], answers, createdAt: now };
}

/**
 * Runs one queued message for a session actor: a command (/new) is answered, anything else becomes
 * a turn. Injected messages go into the running turn. The reply enters the outbox in the turn's final
 * atomic batch and is announced once that batch is durable.
 */
export function createSessionTurn(deps: SessionTurnDeps) {
  const now = deps.now ?? Date.now;
  return fromCallback<RunTurnEvent, RunTurnInput>(({ input, receive, sendBack }) => {
    const first = input.message;
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
      handle?.inject(event.message.content);
    });

    const incoming = { sessionKey: input.sessionKey, channel: first.channel, chatId: first.chatId, content: first.content };
    void (async () => {
      const answered = await deps.conversation.command(incoming);
      if (answered) {
        await queueDelivery(deps.store, deps.bus, replyRecord(first, answered.content, `reply:${first.id}`, [first.id], now()));
        return finish(0);
      }
      let reply: OutboxRecord | undefined;
      const turn = await deps.conversation.begin(incoming, (result) => {
        const taken = injected.slice(0, result.output.injectedTaken);
        reply = replyRecord(first, result.output.reply, `reply:${result.turnId}`, [first.id, ...taken.map((m) => m.id)], now());
        return [outboxPutOp(reply)];
      });
      handle = turn;
      deps.running.add(turn);
      // Messages that arrived while the turn was being set up.
      for (const m of injected) turn.inject(m.content);
      if (cancelled) turn.cancel();
      try {
        const result = await turn.done;
        if (reply) announce(deps.bus, reply);
        finish(result.output.injectedTaken);
      } finally {
        deps.running.delete(turn);
      }
    })().catch(async (err: unknown) => {
      deps.logger?.error({ err, sessionKey: input.sessionKey }, "turn failed outside the turn machine");
      const text = `Sorry, something went wrong: ${err instanceof Error ? err.message : String(err)}`;
      await queueDelivery(deps.store, deps.bus, replyRecord(first, text, `error:${first.id}`, [first.id], now())).catch(() => undefined);
      finish(0);
    });
  });
}
