import { createConversation, type Conversation } from "../actors/conversation.js";
import { DEFAULT_POLICY as DEFAULT_SUPERVISION } from "../machines/supervision.js";
import { createBus, type Bus } from "./bus/index.js";
import type { LoadedConfig } from "./config/index.js";
import { composeHooks, type HookChain } from "./hooks/hook.js";
import { loadHooks } from "./hooks/load.js";
import { createLogger, type Logger } from "./log/logger.js";
import { secretsOf } from "./log/redact.js";
import type { McpHub } from "./mcp/hub.js";
import { createDreamRuntime, type DreamRuntime } from "../actors/dream-runtime.js";
import { promptSkills } from "./context/system-prompt-cache.js";
import { createMemoryFiles } from "./memory/files.js";
import { createOpenAiProvider, type LlmProvider } from "./providers/client.js";
import { fallbackChoices, withFallbacks } from "./providers/fallback.js";
import { resolveProvider } from "./providers/registry.js";
import { startAgentRuntime, type RuntimeStart } from "./runtime-start.js";
import type { Store } from "./store/store.js";
import type { CronService } from "./cron/service.js";
import { createBuiltinTools } from "./tools/builtin/index.js";
import { cronTool } from "./tools/builtin/cron.js";
import { createToolRegistry, type ToolRegistry } from "./tools/registry.js";

/**
 * The runtime `troupe agent` runs in process: store, logger, bus, provider, tools, hooks, Dream and
 * the conversation. createDaemon (runtime.ts) builds the actor system of `troupe gateway` on it.
 */

// The MCP SDK (with ajv and a zod of its own) loads only when an MCP server is configured.
const loadMcp = async () => ({ ...(await import("./mcp/hub.js")), ...(await import("../actors/mcp.js")) });

/** The composition root: config in, the running parts out. */
export interface AgentRuntime {
  bus: Bus;
  store: Store;
  logger: Logger;
  registry: ToolRegistry;
  conversation: Conversation;
  provider: LlmProvider;
  /** The configured MCP servers (undefined when there are none). */
  mcp?: McpHub;
  /** Dream (run in process until the daemon's supervisor takes it over). */
  memory: DreamRuntime;
  /** The hooks every turn runs (agents.defaults.hooks, then the workspace's hooks/). */
  hooks: HookChain;
  /** The cron jobs in the store (what the cron tool adds to), made at first use: the daemon's scheduler runs them. */
  cronJobs(): Promise<CronService>;
  close(): Promise<void>;
}

export interface RuntimeOptions {
  consoleLogs?: boolean;
  stream?: boolean;
  /** Channels the message tool may address. */
  channelNames?: string[];
  /** false turns the per-transition checkpoints off: only for measuring what they cost (npm run bench). */
  durable?: boolean;
  /** The daemon runs the MCP server actors under its supervisor; otherwise (troupe agent) they run on their own. */
  superviseMcp?: boolean;
  /** How long a turn waits for the MCP servers' first connection attempt, and each attempt's limit. */
  mcpConnectTimeoutMs?: number;
  /** Told when the cron jobs change (the daemon's scheduler re-arms). */
  cronChanged?: () => void;
  /** Make what the workspace lacks from the templates (runtime-start.ts); the CLI's agent and gateway ask for it. */
  fillWorkspace?: boolean;
  /** Import nanobot's sessions and cron jobs, once per data dir (src/nanobot/import.ts); the CLI's agent and gateway ask for it. */
  importNanobot?: boolean;
}

/**
 * `started`: the runtime's first steps (src/runtime-start.ts) when the caller took them itself, to
 * load this module while the store opens; else they are taken here.
 */
export async function createAgentRuntime(loaded: LoadedConfig, opts: RuntimeOptions = {}, started?: RuntimeStart): Promise<AgentRuntime> {
  const start = started ?? startAgentRuntime(loaded, { fillWorkspace: opts.fillWorkspace });
  try {
    return await buildAgentRuntime(loaded, opts, start);
  } catch (err) {
    // Not built: the store it opened is let go (another process may take it), and the error stands.
    await start.abandon();
    throw err;
  }
}

async function buildAgentRuntime(loaded: LoadedConfig, opts: RuntimeOptions, { resolved, useLogger, store: opening, filled }: RuntimeStart): Promise<AgentRuntime> {
  const { config, paths, workspace } = loaded;
  // Made while the store opens (what needs no store comes first).
  const logger = createLogger({ logsDir: paths.logsDir, secrets: secretsOf(config), console: opts.consoleLogs });
  useLogger(logger);
  const bus = createBus();
  const d = config.agents.defaults;
  const providerOptions = {
    maxTokens: d.maxTokens,
    temperature: d.temperature,
    reasoningEffort: d.reasoningEffort,
    stream: opts.stream ?? true,
    idleTimeoutMs: d.modelIdleTimeoutSeconds * 1000,
    timeoutMs: d.modelTimeoutSeconds * 1000,
    maxReplyChars: d.maxReplyChars,
    retryMode: d.providerRetryMode,
    logger,
    secrets: secretsOf(config),
  };
  // agents.defaults.fallbackModels: each built at its first use, so one not configured fails only when it is needed (and says why).
  const fallbacks = fallbackChoices(config).map((c) => ({
    label: c.model,
    create: () =>
      createOpenAiProvider(resolveProvider(config, paths.configFile, c), { ...providerOptions, maxTokens: c.maxTokens, temperature: c.temperature, reasoningEffort: c.reasoningEffort }),
  }));
  const provider = withFallbacks(createOpenAiProvider(resolved, providerOptions), fallbacks, logger);
  // The skills (every SKILL.md read and parsed) are loaded while the store opens: they need only the
  // workspace, and a fresh store's open outlasted loading this module by ~2.5 ms of a cold `agent -m`,
  // the main thread idle meanwhile. The system prompt's first build uses them (if still fresh then).
  const skillsLoading = { skills: promptSkills({ config, workspace, logger }), at: Date.now() };
  skillsLoading.skills.catch(() => undefined);
  const store = await opening;
  const created = await filled;
  if (created.length) logger.info({ workspace, created }, `created ${created.join(", ")} in the workspace from the templates`);
  if (store.droppedAtOpen) {
    const { records, bytes } = store.droppedAtOpen;
    logger.warn(
      { dropped: records, bytes },
      `LevelDB dropped ${records} damaged record(s) (${bytes} bytes) of its log while opening the store; what they held is lost (troupe doctor shows what is left)`,
    );
  }
  // Most data dirs have nothing of nanobot's: a few stats, and the import's modules (cron, sessions, their schemas) are not loaded.
  if (opts.importNanobot && (await import("./nanobot/record.js")).nanobotDataPresent(workspace)) {
    const { importNanobot } = await import("./nanobot/import.js");
    await importNanobot({ store, workspace, dataDir: paths.dataDir, defaultTz: d.timezone, logger });
  }
  const registry = createToolRegistry(
    createBuiltinTools({ config, workspace, paths, store, bus, channels: () => opts.channelNames ?? ["cli"] }),
    { maxResultChars: config.tools.maxToolResultChars },
  );
  // nanobot's `agent` has the cron tool too: a job added here is stored, and runs when the gateway runs.
  let cronService: Promise<CronService> | undefined;
  // Loaded at its first use (an in-process agent may never list a job). Dream keeps its own schedule (the
  // daemon's `dream` actor); the cron tool shows it as a protected system job, as nanobot does.
  const cronJobs = () =>
    (cronService ??= Promise.all([import("./cron/service.js"), import("./cron/dream-job.js")]).then(([m, { dreamCronJob }]) => {
      const dream = dreamCronJob(d.dream, store);
      return m.createCronService({
        store,
        defaultTz: d.timezone,
        changed: opts.cronChanged,
        warn: (r, what) => logger.warn({ record: `${r.sublevel}/${r.key}`, problem: r.problem }, what),
        ...(dream ? { dream } : {}),
      });
    }));
  registry.register(cronTool({ service: cronJobs, defaultTz: d.timezone }));
  const memory = createDreamRuntime({
    store,
    provider: d.dream.modelOverride ? createOpenAiProvider({ ...resolved, model: d.dream.modelOverride }, providerOptions) : provider,
    workspace,
    files: createMemoryFiles(workspace, { timezone: d.timezone }),
    settings: d.dream,
    logger,
  });
  const mcpServers = config.tools.mcpServers;
  const connectTimeoutMs = opts.mcpConnectTimeoutMs ?? 30_000;
  const mcpModules = Object.keys(mcpServers).length ? await loadMcp() : undefined;
  const mcp = mcpModules?.createMcpHub({ servers: mcpServers, registry, logger, connectTimeoutMs, secrets: secretsOf(config), ssrfWhitelist: config.tools.ssrfWhitelist });
  const mcpGate = mcp && { ready: () => mcp.firstAttempts(connectTimeoutMs), note: () => mcp.note() };
  const hooks = composeHooks(await loadHooks({ configured: d.hooks, workspace, logger }), logger);
  const conversation = createConversation({ config, store, provider, registry, workspace, bus, logger, durable: opts.durable, mcp: mcpGate, dream: memory.control, hooks, skillsLoading });
  // troupe agent: each server's actor runs on its own (the daemon spawns them under its supervisor).
  const mcpActors =
    mcp && mcpModules && !opts.superviseMcp
      ? mcp.names().map((name) =>
          mcpModules.startMcpActor(mcp, name, DEFAULT_SUPERVISION),
        )
      : [];
  logger.info({ provider: resolved.spec.name, model: resolved.model, workspace }, "runtime ready");
  return {
    bus,
    store,
    logger,
    registry,
    conversation,
    mcp,
    memory,
    hooks,
    cronJobs,
    async close() {
      mcpActors.forEach((a) => a.stop());
      await mcp?.close();
      bus.close();
      await store.close();
      logger.flush();
    },
    provider,
  };
}
