import type { AnyActorRef } from "xstate";
import { sessionInbox } from "../src/store/inbox.js";
import type { Store } from "../src/store/store.js";
import { subagentIdOf } from "../src/store/subagents.js";
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
 * Which sessions have nothing stored that this process did not hand them itself: a key with no
 * inbox row and no open turn when the daemon started, started here for the first time. Its inbox
 * holds only messages written since, each of which this process also routed to it (with its start
 * or as an event), and it has no turn yet: its load need not read the store. Until the daemon has
 * listed what it started with (`known`), and for good once the store has failed (`distrust`), every
 * session reads the store; so does every later start of a session (after a passivation, a crash).
 * A restarted daemon reads every session's store: nothing here outlives the process.
 */
export function createFreshSessions() {
  let stored: Set<string> | null = null;
  let distrusted = false;
  const started = new Set<string>();
  return {
    /** The keys with inbox rows or open turns when the daemon started (listed once all its writers are this process). */
    known(keys: Iterable<string>) {
      if (!distrusted) stored ??= new Set(keys);
    },
    /** From now on every start reads the store (it failed: what it holds is not known here). */
    distrust() {
      distrusted = true;
      stored = null;
    },
    /** Whether this start of `key` may skip the read; marks `key` as started either way. */
    claim(key: string): boolean {
      const first = !started.has(key);
      if (first) started.add(key);
      return first && stored !== null && !stored.has(key) && subagentIdOf(key) === undefined;
    },
  };
}
export type FreshSessions = ReturnType<typeof createFreshSessions>;

/** What a fresh session finds in the store: nothing but what it was handed. */
const NOTHING_STORED: LoadedSession = { queue: [], resumeTurnId: null };

/**
 * The session machine's `load` action: reads what the session starts with and sends it
 * `session.loaded` (or `session.loadFailed`). An action and an event, not an invoked actor: a
 * session's start used to spawn one just for this read. A fresh session (see createFreshSessions)
 * reads nothing: its first message came with its start.
 */
export function createLoadSession(store: Store, fresh?: FreshSessions) {
  return ({ self }: { self: AnyActorRef }, { sessionKey }: { sessionKey: string }) => {
    if (fresh?.claim(sessionKey)) {
      queueMicrotask(() => tellSession(self, { type: "session.loaded", loaded: NOTHING_STORED }));
      return;
    }
    void loadSession(store, sessionKey).then(
      (loaded) => tellSession(self, { type: "session.loaded", loaded }),
      (err: unknown) => tellSession(self, { type: "session.loadFailed", error: err instanceof Error ? err.message : String(err) }),
    );
  };
}
