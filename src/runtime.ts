import type { AnyActorRef } from "xstate";
import { createFreshSessions } from "../actors/load-session.js";
import { createSessionTurns, replyRecord } from "../actors/session-turn.js";
import { createSessionLogic, sessionNotices } from "../actors/session-logic.js";
import { channelActorId, DEFAULT_POLICY as DEFAULT_SUPERVISION, DREAM_ACTOR_ID, sessionActorId, sessionKeyOfActor } from "../machines/supervision.js";
import type { SupervisorEvent } from "../machines/supervisor.machine.js";
import type { Channel } from "./channels/channel.js";
import { createInbound } from "./inbound.js";
import { ConfigError } from "./errors.js";
import { queueDelivery } from "./store/outbox.js";
import type { LoadedConfig } from "./config/index.js";
import { createRedactor, secretsOf } from "./log/redact.js";
import { inputBudget } from "./memory/tokens.js";
import { createBuiltinTools } from "./tools/builtin/index.js";
import { createToolRegistry } from "./tools/registry.js";
import { createAgentRuntime, type AgentRuntime, type RuntimeOptions } from "./agent-runtime.js";
import type { ChannelState, Daemon, DaemonOptions } from "./daemon-types.js";

// Re-exported: the CLI's agent and memory commands import it from here, so what they load stays
// what it was (runtime.ts and its imports; test/integration/runtime-modules.test.ts).
export { createAgentRuntime, type AgentRuntime, type RuntimeOptions };

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
    createDaemonRecovery,
    createDaemonRuns,
    createEventLog,
    createLimiter,
    createSessionHost,
    createSlots,
    createSubagentPool,
    createSupervisor,
    createTranscriber,
    cronFinalOps,
    resolveTranscription,
    spawnTool,
    startUpkeep,
    subagentsTool,
    turnDetail,
  } = await import("./daemon-parts.js");
  const telegram = loaded.config.channels.telegram;
  if (telegram.enabled && !telegram.token) {
    throw new ConfigError(loaded.paths.configFile, ["channels.telegram.token: empty; set the token @BotFather gave you, or set channels.telegram.enabled to false"]);
  }
  const extra = opts.channels ?? [];
  const names = ["api", ...(telegram.enabled ? ["telegram"] : []), ...extra.map((c) => c.name)];
  const core = await createAgentRuntime(loaded, {
    ...opts,
    channelNames: names,
    superviseMcp: true,
    cronChanged: () => supervisor.send({ type: "cron.changed" }),
  });
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

  // The agent runtime's cron service (its cron tool adds through it): loaded already, with daemon-parts.
  const cron = await core.cronJobs();
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
  const supervisor = createSupervisor({
    logger,
    storeDown,
    sessions,
    channel: channelActor.logic,
    // The scheduler starts runs only once it is started (cron.start, below): `runs` is made by then.
    cron: createCronScheduler({ store, logger, start: (run) => runs.start(run) }),
    dream: dreamLogic,
    mcp: mcpHub && mcpActor && { hub: mcpHub, actor: mcpActor },
    notice,
    input: { policy: opts.policy, sessionIdleMs: d.sessionIdleSeconds * 1000 },
  });
  tree.follow(supervisor);

  const serves = (channel: string) => channels.has(channel);
  const send = (event: SupervisorEvent) => supervisor.send(event);
  const runs = createDaemonRuns({ store, bus, logger, provider: core.provider, workspace: loaded.workspace, timezone: d.timezone, heartbeat: loaded.config.gateway.heartbeat, serves, send });
  const recovery = createDaemonRecovery({ store, logger, serves, send, fresh, subagents });

  /** Each channel: starting (connecting to its platform), started, backing off (its platform unreachable), restarting after a failure, or failed for good. */
  const channelStates = (): ChannelState[] =>
    [...channels].map(([name, channel]) => {
      const child = supervisor.getSnapshot().context.children[channelActorId(name)];
      if (child?.status === "failed" || child?.status === "restarting") return { name, state: child.status, error: child.lastError };
      const link = channel.link?.();
      if (started.has(name) && link?.state === "backing_off") return { name, state: "backing_off", error: link.error, since: link.since, failures: link.failures };
      return { name, state: started.has(name) ? "started" : "starting", error: child?.lastError ?? null };
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
  await recovery.atStart();
  await runs.resume(cron);
  supervisor.send({ type: "cron.start", startedAt });
  const from = opts.restartedFrom;
  if (from && channels.has(from.channel)) {
    const text = `Restart completed in ${((Date.now() - from.at) / 1000).toFixed(1)}s.`;
    await queueDelivery(store, bus, replyRecord(from, text, `restart:${from.sessionKey}:${from.at}`, [], Date.now())).catch((err: unknown) =>
      logger.error({ err }, "could not queue the restart notice"),
    );
  }

  recovery.onStoreRecovered();
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
    runCronJob: runs.runNow,
    accept,
    transcriber,
    channels: channelStates,
    storage: () => ({ store: store.health.snapshot(), disk: upkeep.disk() }),
    upkeep: upkeep.run,
    async shutdown() {
      accepting = false;
      await runs.lastChat.stop();
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
