import { randomUUID } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { createActor, type Actor } from "xstate";
import { createChannelActor } from "../actors/channel.js";
import { createLoadSession } from "../actors/load-session.js";
import { createSessionTurns, replyRecord } from "../actors/session-turn.js";
import { createSlot } from "../actors/slot.js";
import { createSubagentPool, type SubagentPool } from "../actors/subagents.js";
import { userMessageWithMedia } from "./context/media.js";
import { sessionMachine, type SessionMessage } from "../machines/session.machine.js";
import { channelActorId, supervisorMachine, type SupervisionPolicy } from "../machines/supervisor.machine.js";
import { createApiChannel } from "./channels/api.js";
import type { Channel, ChannelInbound } from "./channels/channel.js";
import { fault } from "./fault.js";
import { parseSessionKey } from "./session-key.js";
import { inboxDeleteOps, inboxPutOps, wasSeen } from "./store/inbox.js";
import { sessionsToRecover } from "./store/recovery.js";
import { MARKER_RETENTION_MS, pruneMarkers } from "./store/markers.js";
import { spawnTool, subagentsTool } from "./tools/builtin/spawn.js";
import { ConfigError, TroupeError } from "./errors.js";
import { createLimiter, type Limiter } from "./limiter.js";
import { createActorTree, type ActorTree } from "./server/actor-tree.js";
import { queueDelivery } from "./store/outbox.js";
import { createConversation, type Conversation } from "../actors/conversation.js";
import { createBus, type Bus } from "./bus/index.js";
import type { LoadedConfig } from "./config/index.js";
import { createLogger, type Logger } from "./log/logger.js";
import { secretsOf } from "./log/redact.js";
import { createOpenAiProvider, type LlmProvider } from "./providers/client.js";
import { resolveProvider } from "./providers/registry.js";
import { openStore, type Store } from "./store/store.js";
import { chooseExecSandbox } from "./tools/bwrap.js";
import { createBuiltinTools } from "./tools/builtin/index.js";
import { createToolRegistry, type ToolRegistry } from "./tools/registry.js";

/** The composition root: config in, the running parts out. */
export interface AgentRuntime {
  bus: Bus;
  store: Store;
  logger: Logger;
  registry: ToolRegistry;
  conversation: Conversation;
  provider: LlmProvider;
  close(): Promise<void>;
}

export interface RuntimeOptions {
  consoleLogs?: boolean;
  stream?: boolean;
  /** Channels the message tool may address. */
  channelNames?: string[];
  /** false turns the per-transition checkpoints off: only for measuring what they cost (npm run bench). */
  durable?: boolean;
}

export async function createAgentRuntime(loaded: LoadedConfig, opts: RuntimeOptions = {}): Promise<AgentRuntime> {
  const { config, paths, workspace } = loaded;
  // Resolve the provider first: a missing key should fail before anything is opened.
  const resolved = resolveProvider(config, paths.configFile);
  // tools.exec.sandbox "bwrap" with no bwrap installed: the same, before the store is opened.
  chooseExecSandbox(config.tools, process.env, paths.configFile);
  const logger = createLogger({ logsDir: paths.logsDir, secrets: secretsOf(config), console: opts.consoleLogs });
  await mkdir(workspace, { recursive: true });
  const store = await openStore(paths.storeDir);
  const bus = createBus();
  const d = config.agents.defaults;
  const provider = createOpenAiProvider(resolved, {
    maxTokens: d.maxTokens,
    temperature: d.temperature,
    reasoningEffort: d.reasoningEffort,
    stream: opts.stream ?? true,
    idleTimeoutMs: d.modelIdleTimeoutSeconds * 1000,
    timeoutMs: d.modelTimeoutSeconds * 1000,
    maxReplyChars: d.maxReplyChars,
    logger,
    secrets: secretsOf(config),
  });
  const registry = createToolRegistry(
    createBuiltinTools({ config, workspace, paths, store, bus, channels: () => opts.channelNames ?? ["cli"] }),
    { maxResultChars: config.tools.maxToolResultChars },
  );
  const conversation = createConversation({ config, store, provider, registry, workspace, bus, logger, durable: opts.durable });
  logger.info({ provider: resolved.spec.name, model: resolved.model, workspace }, "runtime ready");
  return {
    bus,
    store,
    logger,
    registry,
    conversation,
    async close() {
      bus.close();
      await store.close();
      logger.flush();
    },
    provider,
  };
}

export interface DaemonOptions extends RuntimeOptions {
  channels?: Channel[];
  policy?: Partial<SupervisionPolicy>;
  /** How long running turns get to finish on shutdown before they are stopped at their last checkpoint. */
  shutdownGraceMs?: number;
  /** Telegram polling knobs (tests shorten them). */
  telegram?: { pollTimeoutS?: number; baseBackoffMs?: number; watchdogGraceS?: number };
  /** How long seen:/sent: markers are kept (default 7 days); pruned at start and every hour. */
  markerRetentionMs?: number;
}

export interface Daemon extends AgentRuntime {
  loaded: LoadedConfig;
  supervisor: Actor<typeof supervisorMachine>;
  subagents: SubagentPool;
  tree: ActorTree;
  limiter: Limiter;
  /** Each channel's state, for `troupe daemon start` and `status`. */
  channels(): ChannelState[];
  /** Takes a message from a channel into the system; resolves with its id once it is routed. */
  accept(channel: string, message: ChannelInbound): Promise<string>;
  /** Stops taking work, lets running turns reach a checkpoint, stops every actor, closes the store. */
  shutdown(): Promise<void>;
}

export interface ChannelState {
  name: string;
  state: "starting" | "started" | "restarting" | "failed";
  error: string | null;
}

/** The actor system of `troupe gateway`: a supervisor over channel and session actors. */
export async function createDaemon(loaded: LoadedConfig, opts: DaemonOptions = {}): Promise<Daemon> {
  const telegram = loaded.config.channels.telegram;
  if (telegram.enabled && !telegram.token) {
    throw new ConfigError(loaded.paths.configFile, ["channels.telegram.token: empty; set the token @BotFather gave you, or set channels.telegram.enabled to false"]);
  }
  const extra = opts.channels ?? [];
  const names = ["api", ...(telegram.enabled ? ["telegram"] : []), ...extra.map((c) => c.name)];
  const core = await createAgentRuntime(loaded, { ...opts, channelNames: names });
  const { bus, store, logger, conversation } = core;
  const channels = new Map<string, Channel>([["api", createApiChannel(store)], ...extra.map((c) => [c.name, c] as const)]);
  if (telegram.enabled) {
    // grammy loads only when Telegram is enabled.
    const { createTelegramChannel } = await import("../actors/telegram.js");
    channels.set("telegram", createTelegramChannel({ config: telegram, store, bus, mediaDir: loaded.paths.mediaDir, logger, ...opts.telegram }));
  }
  const d = loaded.config.agents.defaults;
  const limiter = createLimiter(d.maxConcurrentTurns);
  // Subagents get the built-in tools but message (they do not talk to the user); they cannot spawn (depth 1).
  const subagentTools = createBuiltinTools({ config: loaded.config, workspace: loaded.workspace, paths: loaded.paths, store, bus, channels: () => [] });
  const subagents = createSubagentPool({
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
  const tree = createActorTree(bus);
  /** An answer that needs no turn; the message it answers leaves the inbox in the same batch. */
  const notice = (sessionKey: string, message: SessionMessage, text: string) =>
    queueDelivery(store, bus, replyRecord(message, text, `notice:${message.id}`, [message.id], Date.now()), inboxDeleteOps(sessionKey, [message.id])).catch(
      (err: unknown) => logger.error({ err }, "could not queue a notice"),
    );
  /** Work an action started (every promise from an action ends here or in a catch) failed, a store error say: logged, and the user told. */
  const failed = (sessionKey: string, message: SessionMessage, what: string, tell: (why: string) => string) => (err: unknown) => {
    logger.error({ err, sessionKey, messageId: message.id }, `${what} failed`);
    return notice(sessionKey, message, tell(err instanceof Error ? err.message : String(err)));
  };

  const sessionTurns = createSessionTurns({ conversation, store, bus, logger, provider: core.provider, registry: core.registry, workspace: loaded.workspace, durable: opts.durable });
  const session = sessionMachine.provide({
    actors: {
      slot: createSlot(limiter),
      prepareTurn: sessionTurns.prepareTurn,
      turn: sessionTurns.turn,
      turnSettled: sessionTurns.turnSettled,
      loadSession: createLoadSession(store),
    },
    actions: {
      notify: (_, { sessionKey, message, text }) => void notice(sessionKey, message, text),
      stop: (_, { sessionKey, message, text, idle }) =>
        void subagents.cancelAll(sessionKey).then(
          (n) => {
            const also = n ? `Cancelled ${n} subagent(s).` : "";
            return notice(sessionKey, message, idle && n ? also : [text, also].filter(Boolean).join(" "));
          },
          failed(sessionKey, message, "/stop", (why) => [idle ? "" : text, `Could not cancel subagents: ${why}`].filter(Boolean).join(" ")),
        ),
      inject: ({ self }, { message }) => {
        const send = (content: string | Awaited<ReturnType<typeof userMessageWithMedia>>["content"]) =>
          self.getSnapshot().children.turn?.send({ type: "inject", content, messageId: message.id });
        if (!message.media?.length) return void send(message.content);
        // Images reach the model as image parts, as in a turn's first message.
        void userMessageWithMedia(message.content, message.media).then(
          (m) => send(m.content),
          (err: unknown) => logger.error({ err }, "could not read an injected message's media"),
        );
      },
      discard: (_, { sessionKey, ids }) =>
        void store.batch(inboxDeleteOps(sessionKey, ids), { sync: true }).catch((err: unknown) => logger.error({ err }, "could not discard messages")),
      answerCommand: (_, { sessionKey, message, busy }) => {
        const command = message.content.trim().split(/\s+/)[0] ?? "";
        void conversation
          .command({ sessionKey, channel: message.channel, chatId: message.chatId, content: message.content })
          .then(
            (reply) => notice(sessionKey, message, `${reply?.content ?? ""}${busy ? "\nA turn is running; /stop cancels it." : ""}`),
            failed(sessionKey, message, command, (why) => `Sorry, ${command} failed: ${why}`),
          );
      },
    },
  });

  let accepting = true;
  const accept = async (channel: string, inbound: ChannelInbound): Promise<string> => {
    if (!accepting) throw new TroupeError("troupe is shutting down; try again in a moment");
    const id = inbound.messageId ? `${channel}:${inbound.messageId}` : `${channel}:${randomUUID()}`;
    // Checked here, where every channel's messages come in: the store lists a session's records by its key.
    const sessionKey = parseSessionKey(inbound.sessionKey ?? `${channel}:${inbound.chatId}`);
    const at = Date.now();
    // A platform redelivering a message we already took (same id) is not answered twice.
    if (inbound.messageId && (await wasSeen(store, id))) {
      logger.info({ id }, "duplicate message dropped");
      return id;
    }
    const media = inbound.media ?? [];
    await store.batch(inboxPutOps({ id, sessionKey, channel, chatId: inbound.chatId, senderId: inbound.senderId, content: inbound.content, media, at }), { sync: true });
    fault("after-inbox-write");
    bus.publish({ type: "inbound", channel, chatId: inbound.chatId, senderId: inbound.senderId, content: inbound.content, messageId: id, media, sessionKey, at });
    supervisor.send({ type: "inbound", sessionKey, message: { id, channel, chatId: inbound.chatId, content: inbound.content, at, media } });
    return id;
  };

  /** Channels that have started (connected to their platform, or retrying it). */
  const started = new Set<string>();
  const channelActor = createChannelActor({
    channels,
    store,
    bus,
    accept: async (name, m) => void (await accept(name, m)),
    sendProgress: loaded.config.channels.sendProgress,
    sendToolHints: loaded.config.channels.sendToolHints,
    logger,
    onStarted: (name) => void started.add(name),
  });
  const supervisor = createActor(
    supervisorMachine.provide({
      actors: {
        session: session as never,
        channel: channelActor.logic as never,
      },
      actions: {
        rejectMessage: (_, { sessionKey, message, reason }) => void notice(sessionKey, message, `This session is unavailable: it failed repeatedly (${reason}). Restart troupe to try again.`),
        childFailed: (_, { id, error }) => logger.error({ actor: id, error }, "actor failed past its restart limit; marked failed"),
      },
    }),
    { input: { policy: opts.policy, sessionIdleMs: d.sessionIdleSeconds * 1000 }, inspect: tree.inspect },
  );
  supervisor.subscribe({ error: (err) => logger.fatal({ err }, "supervisor failed") });
  /** Each channel: starting (connecting to its platform), started, restarting after a failure, or failed for good. */
  const channelStates = (): ChannelState[] =>
    [...channels.keys()].map((name) => {
      const child = supervisor.getSnapshot().context.children[channelActorId(name)];
      const state = child?.status === "failed" || child?.status === "restarting" ? child.status : started.has(name) ? "started" : "starting";
      return { name, state, error: child?.lastError ?? null };
    });
  supervisor.start();
  for (const name of channels.keys()) supervisor.send({ type: "channel.start", name });
  // Recovery: sessions with an interrupted turn or unanswered messages start now, not at their next message.
  const { wake, left } = await sessionsToRecover(store, (channel) => channels.has(channel));
  if (wake.length) logger.info({ sessions: wake }, "recovering interrupted work");
  if (left.length) logger.info({ sessions: left }, "not resuming turns on channels this daemon does not serve; troupe agent finishes a cli turn before its session's next message");
  for (const sessionKey of wake) supervisor.send({ type: "wake", sessionKey });
  const resumedSubagents = await subagents.recover();
  if (resumedSubagents) logger.info({ subagents: resumedSubagents }, "recovering unfinished subagents");
  // Bounded storage: duplicate-detection markers past their window go, at start and then hourly.
  let pruning = Promise.resolve();
  const prune = () =>
    (pruning = pruning
      .then(() => pruneMarkers(store, Date.now(), opts.markerRetentionMs ?? MARKER_RETENTION_MS))
      .then((n) => void (n && logger.info({ markers: n }, "pruned old seen/sent markers")))
      .catch((err) => logger.warn({ err }, "pruning seen/sent markers failed; will try again")));
  void prune();
  const pruneTimer = setInterval(prune, 3600_000).unref();

  return {
    ...core,
    loaded,
    supervisor,
    subagents,
    tree,
    limiter,
    accept,
    channels: channelStates,
    async shutdown() {
      accepting = false;
      clearInterval(pruneTimer);
      await pruning;
      const grace = opts.shutdownGraceMs ?? 3_000;
      const settled = Promise.allSettled(sessionTurns.turns.running().map((id) => sessionTurns.turns.settled(id)));
      await Promise.race([settled, new Promise((r) => setTimeout(r, grace).unref())]);
      // Whatever still runs stops at its last durable checkpoint (the sessions stop their turns) and resumes from it at the next start.
      await subagents.stop();
      supervisor.stop();
      await sessionTurns.turns.drain();
      await channelActor.drain();
      await core.close();
    },
  };
}
