import type { Transcriber } from "./channels/transcription.js";
import { createActor, type Actor, type AnyActorRef } from "xstate";
import type { StartedRun } from "./cron/fire.js";
import type { CronJob } from "./cron/jobs.js";
import type { CronService } from "./cron/service.js";
import { listSessions } from "./store/sessions.js";
import { createFreshSessions } from "../actors/load-session.js";
import { createSessionTurns, replyRecord } from "../actors/session-turn.js";
import { createSessionLogic, sessionNotices } from "../actors/session-logic.js";
import type { SubagentPool } from "../actors/subagents.js";
import type { SessionHost } from "../actors/session-host.js";
import { channelActorId, DREAM_ACTOR_ID, sessionActorId, sessionKeyOfActor, supervisorMachine, type SupervisionPolicy } from "../machines/supervisor.machine.js";
import type { Channel, ChannelInbound } from "./channels/channel.js";
import { createInbound } from "./inbound.js";
import { listOpenTurns } from "./store/turns.js";
import type { DiskState } from "./store/upkeep.js";
import { ConfigError } from "./errors.js";
import type { Limiter } from "./limiter.js";
import type { ActorTree } from "./server/actor-tree.js";
import type { EventLog } from "./server/event-log.js";
import { queueDelivery } from "./store/outbox.js";
import type { LoadedConfig } from "./config/index.js";
import { createRedactor, secretsOf } from "./log/redact.js";
import type { StoreHealthSnapshot } from "./store/health.js";
import { inputBudget } from "./memory/tokens.js";
import { createBuiltinTools } from "./tools/builtin/index.js";
import { createToolRegistry } from "./tools/registry.js";
import { DEFAULT_POLICY as DEFAULT_SUPERVISION } from "../machines/supervisor.machine.js";
import type { RestartOrigin } from "./restart-origin.js";
import { createAgentRuntime, type AgentRuntime, type RuntimeOptions } from "./agent-runtime.js";

// Re-exported: the CLI's agent and memory commands import it from here, so what they load stays
// what it was (runtime.ts and its imports; test/integration/runtime-modules.test.ts).
export { createAgentRuntime, type AgentRuntime, type RuntimeOptions };

export interface DaemonOptions extends RuntimeOptions {
  channels?: Channel[];
  policy?: Partial<SupervisionPolicy>;
  /** How long running turns get to finish on shutdown before they are stopped at their last checkpoint. */
  shutdownGraceMs?: number;
  /** Telegram polling knobs (tests shorten them). */
  telegram?: { pollTimeoutS?: number; baseBackoffMs?: number; watchdogGraceS?: number };
  /** How long seen:/sent: markers are kept (default 7 days); pruned at start and every hour. */
  markerRetentionMs?: number;
  /** /restart: the gateway restarts the process (after a clean shutdown). Without it /restart says it cannot. */
  onRestart?: (from: RestartOrigin) => void;
  /** This daemon is the one a /restart started: that chat is told the restart completed. */
  restartedFrom?: RestartOrigin;
}


export interface Daemon extends AgentRuntime {
  loaded: LoadedConfig;
  supervisor: Actor<typeof supervisorMachine>;
  /** The live session actors (each its own actor system; the supervisor keeps their records). */
  sessions: SessionHost;
  subagents: SubagentPool;
  tree: ActorTree;
  /** The last minutes of actor events, for `/api/events?since=`. */
  events: EventLog;
  limiter: Limiter;
  /** Cron jobs (add, list, remove, enable); changes re-arm the scheduler. */
  cron: CronService;
  /** Runs a job now, outside its schedule; undefined when there is no such job. */
  runCronJob(id: string): Promise<StartedRun | undefined>;
  /** Each channel's state, for `troupe daemon start` and `status`. */
  channels(): ChannelState[];
  /** Takes a message from a channel into the system; resolves with its id once it is routed. */
  accept(channel: string, message: ChannelInbound): Promise<string>;
  /** Speech to text for every channel's voice and audio (channels.transcription*). */
  transcriber: Transcriber;
  /** The store's health and the free space under the data dir (last measured), for /health and status. */
  storage(): StorageState;
  /** Runs the store's upkeep now (old seen/sent markers pruned, finished turns' journals compacted); it also runs at start and hourly. */
  upkeep(): Promise<void>;
  /** Stops taking work, lets running turns reach a checkpoint, stops every actor, closes the store. */
  shutdown(): Promise<void>;
}

export interface StorageState {
  store: StoreHealthSnapshot;
  disk: DiskState;
}


export interface ChannelState {
  name: string;
  state: "starting" | "started" | "restarting" | "failed";
  error: string | null;
}

/** The actor system of `troupe gateway`: a supervisor over channel and session actors. */
export async function createDaemon(loaded: LoadedConfig, opts: DaemonOptions = {}): Promise<Daemon> {
  // Scheduled instants before this were missed (troupe was not running): each job's catchUp decides.
  const startedAt = Date.now();
  // What only a daemon runs, loaded now: `troupe agent` (createAgentRuntime alone) never initialises it.
  const {
    createActorTree,
    createApiChannel,
    createChannelActor,
    createCronScheduler,
    createCronService,
    createEventLog,
    createHeartbeat,
    createLimiter,
    createSessionHost,
    createSlots,
    createSubagentPool,
    createTranscriber,
    cronFinalOps,
    cronTool,
    finishRunOps,
    fireNow,
    HEARTBEAT_SESSION,
    NO_CHAT,
    pickHeartbeatTarget,
    resolveTranscription,
    sessionsToRecover,
    spawnTool,
    startUpkeep,
    subagentsTool,
    trackLastChat,
    turnDetail,
    unfinishedSystemRuns,
  } = await import("./daemon-parts.js");
  const telegram = loaded.config.channels.telegram;
  if (telegram.enabled && !telegram.token) {
    throw new ConfigError(loaded.paths.configFile, ["channels.telegram.token: empty; set the token @BotFather gave you, or set channels.telegram.enabled to false"]);
  }
  const extra = opts.channels ?? [];
  const names = ["api", ...(telegram.enabled ? ["telegram"] : []), ...extra.map((c) => c.name)];
  const core = await createAgentRuntime(loaded, { ...opts, channelNames: names, superviseMcp: true });
  const { bus, store, logger, conversation } = core;
  if (opts.onRestart) conversation.onRestart(opts.onRestart);
  const channels = new Map<string, Channel>([["api", createApiChannel(store)], ...extra.map((c) => [c.name, c] as const)]);
  const transcription = resolveTranscription(loaded.config);
  const transcriber = createTranscriber(transcription, logger);
  logger.info(transcription.on ? { transcription: transcription.endpoint.source, model: transcription.endpoint.model } : { transcription: "off", why: transcription.why }, "voice transcription");
  if (telegram.enabled) {
    // grammy loads only when Telegram is enabled.
    const { createTelegramChannel } = await import("../actors/telegram.js");
    channels.set("telegram", createTelegramChannel({ config: telegram, store, bus, mediaDir: loaded.paths.mediaDir, logger, transcriber, ...opts.telegram }));
  }
  const d = loaded.config.agents.defaults;
  const limiter = createLimiter(d.maxConcurrentTurns);
  // Subagents get the built-in tools but message (they do not talk to the user); they cannot spawn (depth 1).
  const subagentTools = createBuiltinTools({ config: loaded.config, workspace: loaded.workspace, paths: loaded.paths, store, bus, channels: () => [] });
  const events = createEventLog(bus);
  const tree = createActorTree(bus, {
    secrets: secretsOf(loaded.config),
    // A subagent's turn is an actor system of its own; the tree shows it under the session that spawned it.
    attachTo: (id) => {
      const sub = subagents.active().find((a) => `subagent:${a.record.id}` === id);
      return sub ? sessionActorId(sub.record.origin.sessionKey) : undefined;
    },
  });
  const subagents = createSubagentPool({
    follow: tree.follow,
    config: loaded.config,
    store,
    provider: core.provider,
    registry: createToolRegistry(subagentTools.filter((t) => t.name !== "message"), { maxResultChars: loaded.config.tools.maxToolResultChars }),
    workspace: loaded.workspace,
    limiter: createLimiter(d.maxConcurrentSubagents),
    bus,
    logger,
    // The report is already in the origin session's inbox; this hands it to the session now.
    deliver: (r) => supervisor.send({ type: "inbound", sessionKey: r.sessionKey, message: { id: r.id, channel: r.channel, chatId: r.chatId, content: r.content, at: r.at } }),
  });
  core.registry.register(spawnTool(subagents));
  core.registry.register(subagentsTool(subagents));
  const { notice, failed } = sessionNotices(store, bus, logger);

  const cron = createCronService({ store, defaultTz: d.timezone, changed: () => supervisor.send({ type: "cron.changed" }) });
  core.registry.register(cronTool({ service: cron, defaultTz: d.timezone }));
  const mcpHub = core.mcp;
  const mcpActor = mcpHub && (await import("../actors/mcp.js"));
  const sessionTurns = createSessionTurns({
    conversation,
    store,
    bus,
    logger,
    provider: core.provider,
    registry: core.registry,
    workspace: loaded.workspace,
    durable: opts.durable,
    hooks: core.hooks,
    // A cron run's turn records how the run ended in its own final batch (atomically with the reply).
    finalHook: (result, answers) => cronFinalOps(store, answers, result.state === "responded", result.output.reply, Date.now()),
    contextBudget: inputBudget(d.contextWindowTokens, d.maxTokens),
    toolHintMaxLength: d.toolHintMaxLength,
    toolsReady: mcpHub && (() => mcpHub.firstAttempts(opts.mcpConnectTimeoutMs ?? 30_000)),
  });
  const storeDown = () => store.health.state === "failing";
  const slots = createSlots(limiter);
  // Sessions started for the first time with nothing stored skip their load's read (see createFreshSessions).
  const fresh = createFreshSessions();
  const session = createSessionLogic({ store, logger, conversation, subagents, sessionTurns, slots, storeDown, fresh, notice, failed });

  let accepting = true;
  const { accept, acceptAll } = createInbound({
    store,
    bus,
    logger,
    accepting: () => accepting,
    route: (sessionKey, message) => supervisor.send({ type: "inbound", sessionKey, message }),
  });

  /** Channels that have started (connected to their platform, or retrying it). */
  const started = new Set<string>();
  const channelActor = createChannelActor({
    channels,
    store,
    bus,
    accept: async (name, messages, ops) => void (await acceptAll(name, messages, ops)),
    sendProgress: loaded.config.channels.sendProgress,
    sendToolHints: loaded.config.channels.sendToolHints,
    logger,
    onStarted: (name) => void started.add(name),
  });
  // Sessions are roots of their own actor systems (O(1) to start and stop); the tree shows them under the supervisor.
  const sessions = createSessionHost({
    logic: session,
    follow: (actor, id) => tree.follow(actor, id, "supervisor"),
    onGone: slots.release,
    onEnd: (end) => {
      // The session's history is kept while its actor lives (the consolidator's view), not past it.
      conversation.forget(sessionKeyOfActor(end.id));
      supervisor.send(end);
    },
  });
  const dreamLogic = await core.memory.logic();
  const supervisor = createActor(
    supervisorMachine.provide({
      guards: { storeDown, ...sessions.provided.guards },
      actors: {
        channel: channelActor.logic as never,
        cron: createCronScheduler({ store, logger, start: startRun }) as never,
        ...(mcpHub && mcpActor && {
          mcp: mcpActor.createMcpLogic({
            hub: mcpHub,
            onState: (name, state, error) => {
              if (state === "failed") supervisor.send({ type: "child.failed", id: mcpActor.mcpActorId(name), error: error ?? "failed" });
            },
          }) as never,
        }),
        dream: dreamLogic as never,
      },
      actions: {
        ...sessions.provided.actions,
        rejectMessage: (_, { sessionKey, message, reason }) => void notice(sessionKey, message, `This session is unavailable: it failed repeatedly (${reason}). Restart troupe to try again.`),
        childFailed: (_, { id, error }) => logger.error({ actor: id, error }, "actor failed past its restart limit; marked failed"),
        childRestarting: (_, { id, error, restarts, delayMs }) => logger.warn({ actor: id, error, restarts, delayMs }, "actor failed; restarting"),
      },
    }),
    { input: { policy: opts.policy, sessionIdleMs: d.sessionIdleSeconds * 1000 } },
  );
  supervisor.subscribe({ error: (err) => logger.fatal({ err }, "supervisor failed") });
  tree.follow(supervisor);

  // The chat a heartbeat reports to: the last one someone wrote from (kept in the store across restarts).
  const lastChat = trackLastChat(store, bus, (c) => channels.has(c));
  const heartbeatConfig = loaded.config.gateway.heartbeat;
  const heartbeat = createHeartbeat({
    store,
    provider: core.provider,
    workspace: loaded.workspace,
    timezone: d.timezone,
    keepRecent: heartbeatConfig.keepRecentMessages,
    logger,
    target: async () =>
      (await lastChat.read()) ??
      pickHeartbeatTarget(await listSessions(store, { onCorrupt: () => {} }), (c) => channels.has(c)),
    deliver: (m) => startRun({ inbox: m }),
  });
  /**
   * What carries out a protected system job's run (its record is written; the handler records how it
   * ended). Dream is not one of these: it is its own supervised actor with its own stored deadline (actors/dream.ts).
   */
  const systemJobs = new Map<NonNullable<CronJob["system"]>, (run: StartedRun) => Promise<void>>([["heartbeat", heartbeat.run]]);
  /** A recorded run starts: its message goes to its session, or a system job's handler runs. */
  function startRun(s: Pick<StartedRun, "inbox"> & Partial<StartedRun>): void {
    const m = s.inbox;
    if (m) {
      if (!channels.has(m.channel) && m.channel !== NO_CHAT.channel) logger.warn({ sessionKey: m.sessionKey, channel: m.channel }, "a cron run's reply is for a channel this daemon does not serve; it waits in the outbox");
      bus.publish({ type: "inbound", channel: m.channel, chatId: m.chatId, senderId: m.senderId, content: m.content, messageId: m.id, media: [], sessionKey: m.sessionKey, at: m.at });
      supervisor.send({ type: "inbound", sessionKey: m.sessionKey, message: { id: m.id, channel: m.channel, chatId: m.chatId, content: m.content, at: m.at, media: [] } });
      return;
    }
    if (!s.job || !s.run) return;
    const handler = s.job.system && systemJobs.get(s.job.system);
    if (handler) return void handler(s as StartedRun);
    // A system job with no handler (Dream, until memory is built) is recorded as skipped, not left open.
    void store.batch(finishRunOps(s.job, s.run, "skipped", null, Date.now(), `${s.job.system ?? "job"} has no handler in this troupe`), { sync: true });
  }
  /** Each channel: starting (connecting to its platform), started, restarting after a failure, or failed for good. */
  const channelStates = (): ChannelState[] =>
    [...channels.keys()].map((name) => {
      const child = supervisor.getSnapshot().context.children[channelActorId(name)];
      const state = child?.status === "failed" || child?.status === "restarting" ? child.status : started.has(name) ? "started" : "starting";
      return { name, state, error: child?.lastError ?? null };
    });
  supervisor.start();
  // MCP servers connect in parallel with everything else; a turn waits at most for their first attempt.
  const mcpPolicy = { ...DEFAULT_SUPERVISION, ...opts.policy };
  for (const name of mcpHub?.names() ?? []) supervisor.send({ type: "mcp.start", name, input: { name, policy: mcpPolicy } });
  for (const name of channels.keys()) supervisor.send({ type: "channel.start", name });
  if (d.dream.enabled) {
    supervisor.send({ type: "dream.start" });
    core.memory.attach(() => supervisor.getSnapshot().children[DREAM_ACTOR_ID] as AnyActorRef | undefined);
  }
  // Recovery: sessions with an interrupted turn or unanswered messages start now, not at their next message.
  // A cron job with no chat to report to runs on the pseudo-channel NO_CHAT (its reply is never sent): this daemon serves it.
  const { wake, left, stored } = await sessionsToRecover(store, (channel) => channels.has(channel) || channel === NO_CHAT.channel);
  fresh.known(stored);
  const openTurns = (await listOpenTurns(store, undefined, { onCorrupt: () => {} })).filter((t) => wake.includes(t.sessionKey)).length;
  if (wake.length) logger.info({ turnsToResume: openTurns, sessions: wake.length, sessionKeys: wake }, `recovering interrupted work: ${openTurns} turn(s) to resume, ${wake.length} session(s) with work waiting`);
  else logger.info({ turnsToResume: 0 }, "recovery at start: nothing was interrupted");
  if (left.length) logger.info({ sessions: left }, "not resuming turns on channels this daemon does not serve; troupe agent finishes a cli turn before its session's next message");
  for (const sessionKey of wake) supervisor.send({ type: "wake", sessionKey });
  const resumedSubagents = await subagents.recover();
  if (resumedSubagents) logger.info({ subagents: resumedSubagents }, "recovering unfinished subagents");
  await cron.ensureSystemJob(
    "heartbeat",
    heartbeatConfig.enabled
      ? { name: "heartbeat", message: "Check HEARTBEAT.md", schedule: { kind: "every", everyS: heartbeatConfig.intervalS }, target: { channel: "api", chatId: HEARTBEAT_SESSION } }
      : null,
  );
  // A heartbeat interrupted while deciding decides again (that phase has no side effect); the scheduler re-arms from the store.
  for (const run of await unfinishedSystemRuns(store)) startRun(run);
  supervisor.send({ type: "cron.start", startedAt });
  const from = opts.restartedFrom;
  if (from && channels.has(from.channel)) {
    const text = `Restart completed in ${((Date.now() - from.at) / 1000).toFixed(1)}s.`;
    await queueDelivery(store, bus, replyRecord(from, text, `restart:${from.sessionKey}:${from.at}`, [], Date.now())).catch((err: unknown) =>
      logger.error({ err }, "could not queue the restart notice"),
    );
  }

  // The store came back after a disk failure: what it interrupted resumes as after a restart.
  store.onRecovered(async () => {
    fresh.distrust();
    supervisor.send({ type: "store.recovered" });
    const again = await sessionsToRecover(store, (channel) => channels.has(channel) || channel === NO_CHAT.channel);
    if (again.wake.length) logger.info({ sessions: again.wake }, "store recovered; resuming interrupted work");
    for (const sessionKey of again.wake) supervisor.send({ type: "wake", sessionKey });
    const subs = await subagents.recover();
    if (subs) logger.info({ subagents: subs }, "store recovered; resuming unfinished subagents");
  });
  const storage = loaded.config.storage;
  const redactView = createRedactor(secretsOf(loaded.config));
  const upkeep = await startUpkeep({
    store,
    logger,
    dataDir: loaded.paths.dataDir,
    floor: storage,
    compaction: { afterDays: storage.compactTurnsAfterDays, keepTurns: storage.keepTurnJournals },
    turnView: (turnId) => turnDetail(store, turnId, redactView),
    markerRetentionMs: opts.markerRetentionMs,
  });

  return {
    ...core,
    loaded,
    supervisor,
    sessions,
    subagents,
    tree,
    events,
    limiter,
    cron,
    async runCronJob(id) {
      const started = await fireNow(store, id, Date.now());
      if (started) {
        logger.info({ jobId: id }, "cron job run by hand");
        startRun(started);
      }
      return started;
    },
    accept,
    transcriber,
    channels: channelStates,
    storage: () => ({ store: store.health.snapshot(), disk: upkeep.disk() }),
    upkeep: upkeep.run,
    async shutdown() {
      accepting = false;
      await lastChat.stop();
      await upkeep.stop();
      const grace = opts.shutdownGraceMs ?? 3_000;
      const settled = Promise.allSettled(sessionTurns.turns.running().map((id) => sessionTurns.turns.settled(id)));
      await Promise.race([settled, new Promise((r) => setTimeout(r, grace).unref())]);
      // Whatever still runs stops at its last durable checkpoint (the sessions stop their turns) and resumes from it at the next start.
      await subagents.stop();
      sessions.stopAll();
      supervisor.stop();
      await sessionTurns.turns.drain();
      await channelActor.drain();
      await core.close();
    },
  };
}
