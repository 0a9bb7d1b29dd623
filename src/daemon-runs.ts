import type { Logger } from "pino";
import { createHeartbeat } from "../actors/heartbeat.js";
import type { SupervisorEvent } from "../machines/supervisor.machine.js";
import type { Bus } from "./bus/index.js";
import type { Config } from "./config/schema.js";
import { finishRunOps, fireNow, unfinishedSystemRuns, type StartedRun } from "./cron/fire.js";
import { heartbeatJobSpec, pickHeartbeatTarget } from "./cron/heartbeat.js";
import { NO_CHAT, type CronJob } from "./cron/jobs.js";
import { trackLastChat } from "./cron/last-chat.js";
import type { CronService } from "./cron/service.js";
import type { LlmProvider } from "./providers/client.js";
import { listSessions } from "./store/sessions.js";
import type { Store } from "./store/store.js";

export interface DaemonRunsDeps {
  store: Store;
  bus: Bus;
  logger: Logger;
  provider: LlmProvider;
  workspace: string;
  timezone: string;
  heartbeat: Config["gateway"]["heartbeat"];
  /** Whether this daemon serves a channel. */
  serves: (channel: string) => boolean;
  /** To the supervisor: a run's message goes to its session. */
  send: (event: SupervisorEvent) => void;
}

/** The daemon's cron runs: how a recorded run starts (its session, or a system job's handler), the heartbeat, runs by hand. */
export function createDaemonRuns(deps: DaemonRunsDeps) {
  const { store, bus, logger, serves, send } = deps;
  // The chat a heartbeat reports to: the last one someone wrote from (kept in the store across restarts).
  const lastChat = trackLastChat(store, bus, serves);
  const heartbeat = createHeartbeat({
    store,
    provider: deps.provider,
    workspace: deps.workspace,
    timezone: deps.timezone,
    keepRecent: deps.heartbeat.keepRecentMessages,
    logger,
    target: async () =>
      (await lastChat.read()) ??
      pickHeartbeatTarget(await listSessions(store, { onCorrupt: () => {} }), serves),
    deliver: (m) => start({ inbox: m }),
  });
  /**
   * What carries out a protected system job's run (its record is written; the handler records how it
   * ended). Dream is not one of these: it is its own supervised actor with its own stored deadline (actors/dream.ts).
   */
  const systemJobs = new Map<NonNullable<CronJob["system"]>, (run: StartedRun) => Promise<void>>([["heartbeat", heartbeat.run]]);
  /** A recorded run starts: its message goes to its session, or a system job's handler runs. */
  function start(s: Pick<StartedRun, "inbox"> & Partial<StartedRun>): void {
    const m = s.inbox;
    if (m) {
      if (!serves(m.channel) && m.channel !== NO_CHAT.channel) logger.warn({ sessionKey: m.sessionKey, channel: m.channel }, "a cron run's reply is for a channel this daemon does not serve; it waits in the outbox");
      bus.publish({ type: "inbound", channel: m.channel, chatId: m.chatId, senderId: m.senderId, content: m.content, messageId: m.id, media: [], sessionKey: m.sessionKey, at: m.at });
      send({ type: "inbound", sessionKey: m.sessionKey, message: { id: m.id, channel: m.channel, chatId: m.chatId, content: m.content, at: m.at, media: [] } });
      return;
    }
    if (!s.job || !s.run) return;
    const handler = s.job.system && systemJobs.get(s.job.system);
    if (handler) return void handler(s as StartedRun);
    // A system job with no handler (none today: Dream runs in its own actor) is recorded as skipped, not left open.
    void store.batch(finishRunOps(s.job, s.run, "skipped", null, Date.now(), `${s.job.system ?? "job"} has no handler in this troupe`), { sync: true });
  }

  return {
    start,
    lastChat,
    /** At start: the heartbeat's system job as the config says, and the system runs a stop interrupted started again. */
    async resume(cron: CronService): Promise<void> {
      await cron.ensureSystemJob("heartbeat", heartbeatJobSpec(deps.heartbeat));
      // A heartbeat interrupted while deciding decides again (that phase has no side effect); the scheduler re-arms from the store.
      for (const run of await unfinishedSystemRuns(store)) start(run);
    },
    /** Runs a job now, outside its schedule; undefined when there is no such job. */
    async runNow(id: string): Promise<StartedRun | undefined> {
      const started = await fireNow(store, id, Date.now());
      if (started) {
        logger.info({ jobId: id }, "cron job run by hand");
        start(started);
      }
      return started;
    },
  };
}
