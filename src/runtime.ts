import { mkdir } from "node:fs/promises";
import { createConversation, type Conversation } from "../actors/conversation.js";
import { createBus, type Bus } from "./bus/index.js";
import type { LoadedConfig } from "./config/index.js";
import { createLogger, type Logger } from "./log/logger.js";
import { secretsOf } from "./log/redact.js";
import { createOpenAiProvider } from "./providers/client.js";
import { resolveProvider } from "./providers/registry.js";
import { openStore, type Store } from "./store/store.js";
import { createBuiltinTools } from "./tools/builtin/index.js";
import { createToolRegistry, type ToolRegistry } from "./tools/registry.js";

/** The composition root: config in, the running parts out. */
export interface AgentRuntime {
  bus: Bus;
  store: Store;
  logger: Logger;
  registry: ToolRegistry;
  conversation: Conversation;
  close(): Promise<void>;
}

export async function createAgentRuntime(loaded: LoadedConfig, opts: { consoleLogs?: boolean; stream?: boolean } = {}): Promise<AgentRuntime> {
  const { config, paths, workspace } = loaded;
  // Resolve the provider first: a missing key should fail before anything is opened.
  const resolved = resolveProvider(config, paths.configFile);
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
    logger,
  });
  const registry = createToolRegistry(
    createBuiltinTools({ config, workspace, mediaDir: paths.mediaDir, store, bus, channels: () => ["cli"] }),
    { maxResultChars: config.tools.maxToolResultChars },
  );
  const conversation = createConversation({ config, store, provider, registry, workspace, bus, logger });
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
  };
}
