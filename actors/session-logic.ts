import type { Logger } from "pino";
import type { Bus } from "../src/bus/index.js";
import { userMessageWithMedia } from "../src/context/media.js";
import { inboxDeleteOps } from "../src/store/inbox.js";
import { queueDelivery } from "../src/store/outbox.js";
import type { Store } from "../src/store/store.js";
import { sessionMachine, type SessionMessage } from "../machines/session.machine.js";
import type { Conversation } from "./conversation.js";
import { createLoadSession, type createFreshSessions } from "./load-session.js";
import { replyRecord, type createSessionTurns } from "./session-turn.js";
import type { createSlots } from "./slot.js";
import type { SubagentPool } from "./subagents.js";

/** How a session answers without a turn: a notice (the message it answers leaves the inbox in the same batch), or a failure told to the user. */
export function sessionNotices(store: Store, bus: Bus, logger: Logger) {
  /** An answer that needs no turn; the message it answers leaves the inbox in the same batch. */
  const notice = (sessionKey: string, message: SessionMessage, text: string) =>
    queueDelivery(store, bus, replyRecord(message, text, `notice:${message.id}`, [message.id], Date.now()), inboxDeleteOps(sessionKey, [message.id])).catch(
      (err: unknown) => logger.error({ err }, "could not queue a notice"),
    );
  /** Work an action started (every promise from an action ends here or in a catch) failed, a store error say: logged, and the user told. */
  const failed = (sessionKey: string, message: SessionMessage, what: string, tell: (why: string) => string) => (err: unknown) => {
    logger.error({ err, sessionKey, messageId: message.id }, `${what} failed`);
    return notice(sessionKey, message, tell(err instanceof Error ? err.message : String(err)));
  };
  return { notice, failed };
}

export interface SessionLogicDeps extends ReturnType<typeof sessionNotices> {
  store: Store;
  logger: Logger;
  conversation: Conversation;
  subagents: Pick<SubagentPool, "cancelAll">;
  sessionTurns: ReturnType<typeof createSessionTurns>;
  slots: ReturnType<typeof createSlots>;
  storeDown: () => boolean;
  /** Sessions started for the first time with nothing stored skip their load's read (see createFreshSessions). */
  fresh: ReturnType<typeof createFreshSessions>;
}

/**
 * The session machine with the daemon's actions: loading, preparing and watching turns, slots,
 * notices, /stop (the session's subagents too), messages injected into a running turn, and commands.
 */
export function createSessionLogic(deps: SessionLogicDeps) {
  const { store, logger, conversation, subagents, sessionTurns, slots, storeDown, fresh, notice, failed } = deps;
  /** Each session's commands answered at once, one after another: their answers go out in the order they came. */
  const answering = new Map<string, Promise<void>>();
  return sessionMachine.provide({
    guards: { storeDown, ...slots.guards },
    actors: {
      slot: slots.slot,
      turn: sessionTurns.turn,
    },
    actions: {
      ...slots.actions,
      load: createLoadSession(store, fresh),
      prepareTurn: sessionTurns.prepareTurn,
      watchTurn: sessionTurns.watchTurn,
      notify: (_, { sessionKey, message, text }) => void notice(sessionKey, message, text),
      stop: (_, { sessionKey, message, text, idle }) =>
        void subagents.cancelAll(sessionKey).then(
          (n) => {
            const also = n ? `Cancelled ${n} subagent(s).` : "";
            return notice(sessionKey, message, idle && n ? also : [text, also].filter(Boolean).join(" "));
          },
          failed(sessionKey, message, "/stop", (why) => [idle ? "" : text, `Could not cancel subagents: ${why}`].filter(Boolean).join(" ")),
        ),
      inject: ({ self }, { message }) => {
        const send = (content: string | Awaited<ReturnType<typeof userMessageWithMedia>>["content"]) =>
          self.getSnapshot().children.turn?.send({ type: "inject", content, messageId: message.id });
        if (!message.media?.length) return void send(message.content);
        // Images reach the model as image parts, as in a turn's first message.
        void userMessageWithMedia(message.content, message.media).then(
          (m) => send(m.content),
          (err: unknown) => logger.error({ err }, "could not read an injected message's media"),
        );
      },
      discard: (_, { sessionKey, ids }) =>
        void store.batch(inboxDeleteOps(sessionKey, ids), { sync: true }).catch((err: unknown) => logger.error({ err }, "could not discard messages")),
      answerCommand: (_, { sessionKey, message, busy }) => {
        const command = message.content.trim().split(/\s+/)[0] ?? "";
        const answer = () =>
          conversation.command({ sessionKey, channel: message.channel, chatId: message.chatId, content: message.content }, { busy }).then(
            async (reply) => {
              const running = busy && command.toLowerCase() !== "/restart" ? "\nA turn is running; /stop cancels it." : "";
              await notice(sessionKey, message, `${reply?.content ?? ""}${running}`);
              // /restart: the answer and the message's removal from the inbox are durable before the shutdown starts.
              reply?.afterAnswer?.();
            },
            failed(sessionKey, message, command, (why) => `Sorry, ${command} failed: ${why}`),
          );
        const done = (answering.get(sessionKey) ?? Promise.resolve()).then(answer);
        answering.set(sessionKey, done);
        void done.finally(() => answering.get(sessionKey) === done && answering.delete(sessionKey));
      },
    },
  });
}
