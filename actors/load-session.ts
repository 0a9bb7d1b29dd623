import { fromPromise } from "xstate";
import { sessionInbox } from "../src/store/inbox.js";
import type { Store } from "../src/store/store.js";
import { getTurn, listOpenTurns } from "../src/store/turns.js";
import type { LoadedSession, SessionMessage } from "../machines/session.machine.js";
import type { InjectedMessage, TurnContext, TurnInput } from "../machines/turn.machine.js";

/** Inbox ids an interrupted turn already holds: its first message and those injected into it. */
function idsInTurn(input: TurnInput, snapshot: unknown): string[] {
  const context = (snapshot as { context?: Partial<TurnContext> } | undefined)?.context;
  const injected = (context?.injected ?? []) as InjectedMessage[];
  return [input.messageId, ...(context?.takenIds ?? []), ...injected.map((m) => m.messageId)].filter((id): id is string => Boolean(id));
}

/**
 * What a session starts with: its unanswered inbox messages (oldest first) and its interrupted
 * turn, if any. Messages the interrupted turn already holds are left to it, not queued again.
 */
export function createLoadSession(store: Store) {
  return fromPromise<LoadedSession, { sessionKey: string }>(async ({ input }) => {
    const open = await listOpenTurns(store, input.sessionKey);
    const records = (await Promise.all(open.map((t) => getTurn(store, t.turnId)))).filter((r) => r && !r.final);
    records.sort((a, b) => a!.createdAt - b!.createdAt);
    const interrupted = records[0];
    const held = new Set(interrupted ? idsInTurn(interrupted.input as TurnInput, interrupted.snapshot) : []);
    const queue: SessionMessage[] = (await sessionInbox(store, input.sessionKey))
      .filter((m) => !held.has(m.id))
      .map((m) => ({ id: m.id, channel: m.channel, chatId: m.chatId, content: m.content, at: m.at, media: m.media }));
    return { queue, resumeTurnId: interrupted?.turnId ?? null };
  });
}
