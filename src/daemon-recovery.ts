import type { Logger } from "pino";
import type { FreshSessions } from "../actors/load-session.js";
import type { SubagentPool } from "../actors/subagents.js";
import type { SupervisorEvent } from "../machines/supervisor.machine.js";
import { NO_CHAT } from "./cron/jobs.js";
import { sessionsToRecover } from "./store/recovery.js";
import type { Store } from "./store/store.js";
import { listOpenTurns } from "./store/turns.js";

export interface DaemonRecoveryDeps {
  store: Store;
  logger: Logger;
  /** Whether this daemon serves a channel. */
  serves: (channel: string) => boolean;
  /** To the supervisor: a session with work waiting is woken. */
  send: (event: SupervisorEvent) => void;
  fresh: FreshSessions;
  subagents: Pick<SubagentPool, "recover">;
}

/** How the daemon resumes interrupted work: at its start, and when the store comes back after a disk failure. */
export function createDaemonRecovery(deps: DaemonRecoveryDeps) {
  const { store, logger, send, fresh, subagents } = deps;
  // A cron job with no chat to report to runs on the pseudo-channel NO_CHAT (its reply is never sent): this daemon serves it.
  const serves = (channel: string) => deps.serves(channel) || channel === NO_CHAT.channel;
  return {
    /** Recovery: sessions with an interrupted turn or unanswered messages start now, not at their next message. */
    async atStart(): Promise<void> {
      const { wake, left, stored } = await sessionsToRecover(store, serves);
      fresh.known(stored);
      const openTurns = (await listOpenTurns(store, undefined, { onCorrupt: () => {} })).filter((t) => wake.includes(t.sessionKey)).length;
      if (wake.length) logger.info({ turnsToResume: openTurns, sessions: wake.length, sessionKeys: wake }, `recovering interrupted work: ${openTurns} turn(s) to resume, ${wake.length} session(s) with work waiting`);
      else logger.info({ turnsToResume: 0 }, "recovery at start: nothing was interrupted");
      if (left.length) logger.info({ sessions: left }, "not resuming turns on channels this daemon does not serve; troupe agent finishes a cli turn before its session's next message");
      for (const sessionKey of wake) send({ type: "wake", sessionKey });
      const resumedSubagents = await subagents.recover();
      if (resumedSubagents) logger.info({ subagents: resumedSubagents }, "recovering unfinished subagents");
    },
    /** The store came back after a disk failure: what it interrupted resumes as after a restart. */
    onStoreRecovered(): void {
      store.onRecovered(async () => {
        fresh.distrust();
        send({ type: "store.recovered" });
        const again = await sessionsToRecover(store, serves);
        if (again.wake.length) logger.info({ sessions: again.wake }, "store recovered; resuming interrupted work");
        for (const sessionKey of again.wake) send({ type: "wake", sessionKey });
        const subs = await subagents.recover();
        if (subs) logger.info({ subagents: subs }, "store recovered; resuming unfinished subagents");
      });
    },
  };
}
