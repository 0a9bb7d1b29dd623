import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { McpServerConfig } from "../config/tools-schema.js";
import type { Logger } from "../log/logger.js";
import { createRedactor, mcpSecrets } from "../log/redact.js";
import type { Tool } from "../tools/contract.js";
import { ToolError } from "../tools/contract.js";
import { createSsrfGuard } from "../tools/ssrf.js";
import type { ToolRegistry } from "../tools/registry.js";
import { toolsFor } from "./adapters.js";
import { toolNameFor } from "./names.js";
import { openConnection, transportKind, type McpConnection, type McpTransportKind } from "./connection.js";

export type McpServerState = "connecting" | "ready" | "reconnecting" | "failed";

/** One server, as `troupe mcp list` and GET /api/mcp show it. */
export interface McpServerStatus {
  name: string;
  transport: McpTransportKind;
  state: McpServerState;
  tools: number;
  resources: number;
  prompts: number;
  lastError: string | null;
  since: number;
}

interface Entry {
  name: string;
  config: McpServerConfig;
  kind: McpTransportKind;
  state: McpServerState;
  lastError: string | null;
  since: number;
  connection?: McpConnection;
  counts: { tools: number; resources: number; prompts: number };
  registered: string[];
  onLost: Set<(error: Error) => void>;
  /** Calls waiting for the server to be ready again (to retry a request it never received). */
  onReady: Set<(error?: Error) => void>;
  attempted: boolean;
}

export interface McpHubOptions {
  servers: Record<string, McpServerConfig>;
  registry: ToolRegistry;
  logger: Logger;
  /** For initialize and the listings (tool calls use each server's toolTimeout). */
  connectTimeoutMs?: number;
  /** Redacted from the errors the hub reports (they quote servers' stderr), as the logs redact them; the servers' own credentials always are. */
  secrets?: Iterable<string>;
  /** tools.ssrfWhitelist: the non-public addresses or ranges an HTTP server may be at (none by default, loopback included). */
  ssrfWhitelist?: string[];
  now?: () => number;
}

/** Node fires a longer timer at once; a toolTimeout of days is as good as none. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * The MCP servers' connections and their tools in the registry. The server actors (machines/mcp)
 * drive it: connect, watch for loss, report state. It holds no XState, so the daemon's supervisor
 * and an in-process `troupe agent` run the same servers.
 */
export function createMcpHub(opts: McpHubOptions) {
  const now = opts.now ?? Date.now;
  const { registry, logger } = opts;
  const redact = createRedactor([...(opts.secrets ?? []), ...mcpSecrets(opts.servers)]);
  const guard = createSsrfGuard(opts.ssrfWhitelist);
  const entries = new Map<string, Entry>();
  for (const [name, config] of Object.entries(opts.servers)) {
    entries.set(name, { name, config, kind: transportKind(config), state: "connecting", lastError: null, since: now(), counts: { tools: 0, resources: 0, prompts: 0 }, registered: [], onLost: new Set(), onReady: new Set(), attempted: false });
  }
  let closed = false;
  let attemptWaiters: Array<() => void> = [];
  const settleAttempts = () => {
    if ([...entries.values()].every((e) => e.attempted)) {
      attemptWaiters.forEach((w) => w());
      attemptWaiters = [];
    }
  };
  const entry = (name: string) => {
    const e = entries.get(name);
    if (!e) throw new Error(`no MCP server named ${name}`);
    return e;
  };

  /** Swaps a server's tools in the registry: the next model call sees the new set. */
  function install(e: Entry, tools: Tool[]) {
    const mine = new Set(e.registered);
    /** Another server's (or a built-in's) name: "mcp_a_b_c" from server a_b and from server a. */
    const takenByOther = (name: string) => registry.get(name) !== undefined && !mine.has(name);
    const named = tools.map((tool) => {
      let name = tool.name;
      for (let i = 2; takenByOther(name); i++) name = toolNameFor(`${tool.name.slice(0, 60)}_${i}`);
      if (name !== tool.name) logger.warn({ server: e.name, tool: tool.name, as: name }, "MCP tool renamed: its name is taken by another tool");
      return name === tool.name ? tool : { ...tool, name };
    });
    const names = new Set(named.map((t) => t.name));
    for (const old of e.registered) if (!names.has(old)) registry.unregister(old);
    named.forEach((tool) => registry.register(tool));
    e.registered = [...names];
  }

  function lose(e: Entry, connection: McpConnection, error: Error) {
    if (e.connection !== connection) return;
    e.connection = undefined;
    void connection.close();
    logger.warn({ server: e.name, err: error.message }, "MCP server connection lost");
    for (const listener of [...e.onLost]) listener(error);
  }

  async function refresh(e: Entry, connection: McpConnection) {
    const listings = await connection.list();
    if (e.connection !== connection) return;
    const access = {
      server: e.name,
      timeoutMs: Math.min(MAX_TIMER_MS, e.config.toolTimeout * 1000),
      client: () => {
        if (!e.connection) {
          const why = e.lastError ? ` (last error: ${e.lastError})` : "";
          throw new ToolError(`MCP server "${e.name}" is ${e.state}${why}; its tools are unavailable until it is ready again`);
        }
        return e.connection.client;
      },
      lost: (client: Client, error: Error) => {
        // A late failure on an old connection must not take down the new one.
        if (e.connection?.client === client) lose(e, e.connection, e.connection.explain(error));
      },
      ready: (ms: number) =>
        new Promise<void>((resolve, reject) => {
          if (e.connection && e.state === "ready") return resolve();
          const timer = setTimeout(() => done(new Error(`not ready within ${ms / 1000}s`)), ms);
          const done = (error?: Error) => {
            clearTimeout(timer);
            e.onReady.delete(done);
            if (error) reject(error);
            else resolve();
          };
          e.onReady.add(done);
        }),
    };
    const { tools, toolCount, unmatched } = toolsFor(listings, e.config.enabledTools, access);
    if (unmatched.length) {
      logger.warn({ server: e.name, unmatched, available: listings.tools.map((t) => t.name) }, "enabledTools entries match no tool of this MCP server");
    }
    install(e, tools);
    e.counts = { tools: toolCount, resources: listings.resources.length, prompts: listings.prompts.length };
  }

  return {
    names: () => [...entries.keys()],
    size: () => entries.size,

    /** Opens the server's connection and installs its tools; a failure leaves nothing open. */
    async connect(name: string, signal?: AbortSignal): Promise<{ tools: number }> {
      const e = entry(name);
      const connection = await openConnection(e.config, {
        name,
        signal,
        timeoutMs: opts.connectTimeoutMs ?? 30_000,
        redact,
        guard,
        onStderr: (line) => logger.debug({ server: name, stderr: line }, "MCP server stderr"),
        // Over HTTP these are mostly the event stream dropping (a restart): noted, not warned about.
        onError: (err) =>
          e.kind === "stdio"
            ? logger.warn({ server: name, err: err.message }, "MCP server error (a stdio server must write only JSON-RPC to stdout; its logs belong on stderr)")
            : logger.debug({ server: name, err: err.message }, "MCP transport error"),
        onListChanged: () => {
          if (e.connection !== connection) return;
          refresh(e, connection).then(
            () => logger.info({ server: name, tools: e.counts.tools }, "MCP server's lists changed; tools refreshed"),
            (err: Error) => logger.warn({ server: name, err: err.message }, "MCP server's lists changed but could not be listed again"),
          );
        },
      });
      if (signal?.aborted || closed) {
        await connection.close();
        throw closed ? new Error("troupe is shutting down") : (signal!.reason as Error);
      }
      e.connection = connection;
      try {
        await refresh(e, connection);
      } catch (err) {
        e.connection = undefined;
        await connection.close();
        throw err;
      }
      void connection.closed.then((error) => lose(e, connection, error ?? new Error("the server closed the connection")));
      logger.info({ server: name, transport: e.kind, tools: e.counts.tools }, "MCP server ready");
      return { tools: e.counts.tools };
    },

    /** Calls `onLost` once when the current connection goes; returns the unsubscribe. */
    watch(name: string, onLost: (error: Error) => void): () => void {
      const e = entry(name);
      if (!e.connection) {
        onLost(new Error("not connected"));
        return () => {};
      }
      const once = (error: Error) => {
        e.onLost.delete(once);
        onLost(error);
      };
      e.onLost.add(once);
      return () => e.onLost.delete(once);
    },

    /** The server actor entered a state. A failed server's tools leave the registry. */
    report(name: string, state: McpServerState, error: string | null) {
      const e = entry(name);
      e.state = state;
      // The first attempt is over once its outcome is known: a turn then sees the server as it is.
      if (state !== "connecting" && !e.attempted) {
        e.attempted = true;
        settleAttempts();
      }
      e.lastError = error ?? (state === "ready" ? null : e.lastError);
      e.since = now();
      if (state === "ready" || state === "failed") {
        for (const waiter of [...e.onReady]) waiter(state === "failed" ? new Error(`MCP server "${name}" failed`) : undefined);
      }
      if (state === "failed") {
        for (const tool of e.registered) registry.unregister(tool);
        e.registered = [];
        logger.error({ server: name, error }, "MCP server failed past its restart limit; its tools are removed");
      }
      if (state === "reconnecting" && error) logger.warn({ server: name, error }, "MCP server reconnecting");
    },

    status(): McpServerStatus[] {
      return [...entries.values()].map((e) => ({ name: e.name, transport: e.kind, state: e.state, ...e.counts, lastError: e.lastError, since: e.since }));
    },

    /** Resolves when every server has made its first connection attempt (or after `maxMs`). */
    firstAttempts(maxMs: number): Promise<void> {
      if ([...entries.values()].every((e) => e.attempted)) return Promise.resolve();
      return new Promise((resolve) => {
        const timer = setTimeout(resolve, maxMs);
        timer.unref();
        attemptWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },

    /** For the model's next turn: servers whose tools are not (or no longer) available, and why. */
    note(): string | undefined {
      const down = [...entries.values()].filter((e) => e.state !== "ready");
      if (!down.length) return undefined;
      const lines = down.map((e) => `- ${e.name}: ${e.state}${e.lastError ? ` (last error: ${e.lastError})` : ""}`);
      return `# MCP servers not ready\n\nThese MCP servers are not ready; their tools are missing or answer with an error until they are:\n${lines.join("\n")}`;
    },

    /** Closes every connection (stdio servers' process groups with them). */
    async close(): Promise<void> {
      closed = true;
      await Promise.all(
        [...entries.values()].map(async (e) => {
          const connection = e.connection;
          e.connection = undefined;
          e.onLost.clear();
          await connection?.close();
        }),
      );
    },
  };
}
export type McpHub = ReturnType<typeof createMcpHub>;
