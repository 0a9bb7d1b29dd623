import { fromPromise } from "xstate";
import { sessionInbox } from "../src/store/inbox.js";
import type { Store } from "../src/store/store.js";
import { getTurn, listOpenTurns } from "../src/store/turns.js";
import type { LoadedSession, SessionMessage } from "../machines/session.machine.js";
import type { TurnRecord } from "../src/store/turns.js";

/**
 * Inbox ids an interrupted turn answers: its first message and those it took in. Messages injected
 * but not yet taken are not among them: a resumed turn starts without them (see createTurnRuntime),
 * and the session queues them for the next turn.
 */
const idsInTurn = (record: TurnRecord): string[] =>
  [record.input?.messageId, ...record.snapshot.context.takenIds].filter((id): id is string => Boolean(id));

/**
 * What a session starts with: its unanswered inbox messages (oldest first) and its interrupted
 * turn, if any. Messages the interrupted turn already answers are left to it, not queued again.
 */
export function createLoadSession(store: Store) {
  return fromPromise<LoadedSession, { sessionKey: string }>(async ({ input }) => {
    const open = await listOpenTurns(store, input.sessionKey);
    const records = (await Promise.all(open.map((t) => getTurn(store, t.turnId)))).filter((r) => r && !r.final);
    records.sort((a, b) => a!.createdAt - b!.createdAt);
    const interrupted = records[0];
    const held = new Set(interrupted ? idsInTurn(interrupted) : []);
    const queue: SessionMessage[] = (await sessionInbox(store, input.sessionKey))
      .filter((m) => !held.has(m.id))
      .map((m) => ({ id: m.id, channel: m.channel, chatId: m.chatId, content: m.content, at: m.at, media: m.media }));
    return { queue, resumeTurnId: interrupted?.turnId ?? null };
  });
}
