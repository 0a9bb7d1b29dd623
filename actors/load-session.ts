import type { AnyActorRef } from "xstate";
import { sessionInbox } from "../src/store/inbox.js";
import type { Store } from "../src/store/store.js";
import { getTurn, listOpenTurns } from "../src/store/turns.js";
import type { LoadedSession, SessionEvent, SessionMessage } from "../machines/session.machine.js";
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
export async function loadSession(store: Store, sessionKey: string): Promise<LoadedSession> {
  const open = await listOpenTurns(store, sessionKey);
  const records = (await Promise.all(open.map((t) => getTurn(store, t.turnId)))).filter((r) => r && !r.final);
  records.sort((a, b) => a!.createdAt - b!.createdAt);
  const interrupted = records[0];
  const held = new Set(interrupted ? idsInTurn(interrupted) : []);
  const queue: SessionMessage[] = (await sessionInbox(store, sessionKey))
    .filter((m) => !held.has(m.id))
    .map((m) => ({ id: m.id, channel: m.channel, chatId: m.chatId, content: m.content, at: m.at, media: m.media }));
  return { queue, resumeTurnId: interrupted?.turnId ?? null };
}

/** Sends a session actor an event, unless it has ended meanwhile (stopped at shutdown, replaced). */
export const tellSession = (self: AnyActorRef, event: SessionEvent) => {
  if (self.getSnapshot().status === "active") self.send(event);
};

/**
 * The session machine's `load` action: reads what the session starts with and sends it
 * `session.loaded` (or `session.loadFailed`). An action and an event, not an invoked actor: a
 * session's start used to spawn one just for this read.
 */
export function createLoadSession(store: Store) {
  return ({ self }: { self: AnyActorRef }, { sessionKey }: { sessionKey: string }) =>
    void loadSession(store, sessionKey).then(
      (loaded) => tellSession(self, { type: "session.loaded", loaded }),
      (err: unknown) => tellSession(self, { type: "session.loadFailed", error: err instanceof Error ? err.message : String(err) }),
    );
}
