import type { AgentRuntime } from "../agent-runtime.js";
import { apiReplies, createApiChannel } from "../channels/api.js";
import { inboxDeleteOps, sessionInbox } from "../store/inbox.js";
import { outboxDeliveredOps, outboxPutOp, pendingOutbox } from "../store/outbox.js";
import type { Store, StoreOp } from "../store/store.js";
import { replyRecord, skipReply } from "../../actors/session-turn.js";
import type { TurnHandle, TurnResult } from "../../actors/turn.js";
import type { TurnInput } from "../../machines/turn.machine.js";
import type { Answer } from "./agent-backend.js";

/**
 * A message the daemon took in before it stopped, sent again by its client (same Idempotency-Key,
 * so the same inbox id `api:<key>`) to an in-process `troupe agent` that now holds the store. It is
 * the same message: answered once, with the reply its turn gave, wherever that turn ran.
 */


/**
 * The reply to a taken message, if its turn ended: still in the outbox (no daemon has delivered it:
 * it is delivered here, to the chat's mailbox, as the daemon's API channel would, so no daemon
 * delivers it again) or in the API chat's mailbox already.
 */
export async function takenAnswer(store: Store, sessionKey: string, id: string): Promise<{ content: string } | undefined> {
  const queued = (await pendingOutbox(store, "api")).find((r) => r.chatId === sessionKey && r.answers.includes(id));
  if (queued) {
    await store.batch([...createApiChannel(store).deliveryOps!(queued), ...outboxDeliveredOps(queued.deliveryId, Date.now())], { sync: true });
    return { content: queued.content };
  }
  const delivered = (await apiReplies(store, sessionKey)).find((r) => r.answers.includes(id));
  return delivered && { content: delivered.content };
}

/**
 * A turn the daemon started for a channel message (a `troupe agent` through the daemon, then the
 * daemon died) ends as the daemon would end it: its reply queued for that channel, the messages it
 * answers out of the inbox, or the daemon would answer them again. A turn of this process has neither.
 */
export const channelReplyOps = (input: Pick<TurnInput, "messageId" | "sessionKey" | "channel" | "chatId">) => (result: TurnResult): StoreOp[] => {
  if (!input.messageId) return [];
  const answers = [input.messageId, ...result.output.takenIds];
  const reply = skipReply(input.channel, result.output) ? [] : [outboxPutOp(replyRecord(input, result.output.reply, `reply:${result.turnId}`, answers, Date.now()))];
  return [...reply, ...inboxDeleteOps(input.sessionKey, answers)];
};

/**
 * A taken message, once its interrupted turn (if any) was finished: its reply; or, still waiting in
 * the inbox (the daemon stopped before its turn began), its turn run here, ending as the daemon's would.
 */
export async function answerTaken(runtime: AgentRuntime, sessionKey: string, id: string, track: (t: TurnHandle) => TurnHandle): Promise<Answer> {
  const answered = await takenAnswer(runtime.store, sessionKey, id);
  if (answered) return answered;
  const waiting = (await sessionInbox(runtime.store, sessionKey)).find((m) => m.id === id);
  if (!waiting) return { content: `This message was answered already; troupe sessions show ${sessionKey} shows the answer.` };
  const msg = { sessionKey, channel: waiting.channel, chatId: waiting.chatId, content: waiting.content, media: waiting.media, messageId: id };
  const result = await track(await runtime.conversation.begin(msg, channelReplyOps(msg))).done;
  runtime.conversation.afterTurn(sessionKey, result.output.newMessages);
  return { ...((await takenAnswer(runtime.store, sessionKey, id)) ?? { content: result.output.reply }), state: result.state };
}
