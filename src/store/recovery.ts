import { inboxRecordSchema } from "./inbox.js";
import type { Store } from "./store.js";
import { subagentIdOf } from "./subagents.js";
import { getTurn, listOpenTurns } from "./turns.js";

/**
 * Which sessions a starting daemon wakes: those with an interrupted turn or unanswered messages on
 * a channel it serves. A session whose interrupted turn is on a channel it does not serve (a `cli`
 * turn of the in-process `troupe agent`) is left alone, even with other work waiting: that turn
 * comes first in the session's history and its reply has nowhere to go here; `troupe agent` finishes
 * it before its session's next message. Subagents' turns are the subagent pool's to recover.
 * `stored`: every session with an open turn or an inbox row, woken or not.
 */
export async function sessionsToRecover(
  store: Store,
  serves: (channel: string) => boolean,
): Promise<{ wake: string[]; left: string[]; stored: string[] }> {
  const all = await listOpenTurns(store);
  const open = all.filter((t) => subagentIdOf(t.sessionKey) === undefined);
  const wake = new Set<string>();
  const left = new Set<string>();
  for (const t of open) {
    const channel = ((await getTurn(store, t.turnId))?.input as { channel?: string } | undefined)?.channel;
    // A turn without a readable record is the session's to sort out (it skips it), so it is woken.
    (channel === undefined || serves(channel) ? wake : left).add(t.sessionKey);
  }
  const inbox = (await store.list("inbox", inboxRecordSchema)).map((r) => r.value);
  for (const m of inbox) if (serves(m.channel)) wake.add(m.sessionKey);
  // Every key with something stored, served here or not (see createFreshSessions).
  const stored = [...new Set([...all.map((t) => t.sessionKey), ...inbox.map((m) => m.sessionKey)])];
  return { wake: [...wake].filter((key) => !left.has(key)), left: [...left], stored };
}
