import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Prompt, Resource, Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import type { McpServerConfig } from "../config/tools-schema.js";
import { VERSION } from "../version.js";
import { describeNetworkError } from "../net-errors.js";
import { createStderrTail, describeExit, McpConnectionError } from "./failure.js";
import { checkMcpUrl, guardedMcpFetch, shownUrl } from "./safe-fetch.js";
import { ProcessGroupStdioTransport } from "./stdio-transport.js";
import type { SsrfGuard } from "../tools/ssrf.js";

export type McpTransportKind = "stdio" | "sse" | "streamableHttp";

/** The transport a server entry names, or the one its url or command implies (nanobot's rule). */
export function transportKind(server: McpServerConfig): McpTransportKind {
  if (server.type) return server.type;
  if (server.command) return "stdio";
  return new URL(server.url).pathname.replace(/\/+$/, "").endsWith("/sse") ? "sse" : "streamableHttp";
}

/**
 * A stdio server's environment: the few variables the SDK deems safe (HOME, PATH, USER, ...) and
 * the server's own `env`. Nothing else of troupe's environment (its provider keys) reaches it.
 */
export function serverEnvironment(server: McpServerConfig): Record<string, string> {
  return { ...getDefaultEnvironment(), ...server.env };
}

export interface Listings {
  tools: McpTool[];
  resources: Resource[];
  prompts: Prompt[];
}

export interface McpConnection {
  client: Client;
  kind: McpTransportKind;
  /** Resolves (once) when the connection is gone: the process exited, the stream closed, or close() was called. */
  closed: Promise<Error | undefined>;
  list(signal?: AbortSignal): Promise<Listings>;
  /** An error of this connection, or, if its stdio server exited, that exit (code and last stderr lines). */
  explain(error: Error): Error;
  close(): Promise<void>;
}

export interface ConnectOptions {
  /** The server's name in tools.mcpServers (errors name the setting to fix). */
  name: string;
  /** The listed tools, resources or prompts changed (notifications/…/list_changed). */
  onListChanged: () => void;
  onStderr?: (line: string) => void;
  /** A protocol error that does not end the connection (a stdio server printing its logs to stdout). */
  onError?: (error: Error) => void;
  signal?: AbortSignal;
  /** For initialize and the listings. */
  timeoutMs: number;
  /** Applied to the errors this connection gives (they quote the server's stderr). */
  redact?: (text: string) => string;
  /** What an HTTP server's URL, and every request and redirect to it, must pass (tools.ssrfWhitelist). */
  guard: SsrfGuard;
}

function transportFor(server: McpServerConfig, kind: McpTransportKind, opts: ConnectOptions): Transport {
  if (kind === "stdio") {
    return new ProcessGroupStdioTransport({ command: server.command, args: server.args, env: serverEnvironment(server), cwd: server.cwd ?? undefined, setting: `tools.mcpServers.${opts.name}`, onStderr: opts.onStderr });
  }
  const requestInit = { headers: server.headers };
  const fetch = guardedMcpFetch(opts.guard);
  if (kind === "sse") return new SSEClientTransport(new URL(server.url), { requestInit, fetch });
  return new StreamableHTTPClientTransport(new URL(server.url), { requestInit, fetch });
}

async function listAll<T>(page: (cursor: string | undefined) => Promise<{ items: T[]; nextCursor?: string }>): Promise<T[]> {
  const all: T[] = [];
  let cursor: string | undefined;
  // A server that hands back the same cursor forever is cut off after 100 pages.
  for (let i = 0; i < 100; i++) {
    const { items, nextCursor } = await page(cursor);
    all.push(...items);
    if (!nextCursor || nextCursor === cursor) break;
    cursor = nextCursor;
  }
  return all;
}

/** Starts the transport, runs initialize, and hands back the live client. */
export async function openConnection(server: McpServerConfig, opts: ConnectOptions): Promise<McpConnection> {
  const kind = transportKind(server);
  // Refused before any connection: nothing is started and nothing is sent.
  if (kind !== "stdio") await checkMcpUrl(opts.guard, new URL(server.url));
  const changed = { autoRefresh: false, onChanged: () => opts.onListChanged() };
  const client = new Client({ name: "troupe", version: VERSION }, { capabilities: {}, listChanged: { tools: changed, resources: changed, prompts: changed } });
  const stderr = createStderrTail();
  const transport = transportFor(server, kind, {
    ...opts,
    onStderr: (line) => {
      stderr.push(line);
      opts.onStderr?.(line);
    },
  });
  const redact = opts.redact ?? ((text: string) => text);
  /** A stdio server that exited is named by its exit status and last stderr lines, not the SDK's "Connection closed". */
  const exited = (cause?: unknown): Error | undefined => {
    const exit = transport instanceof ProcessGroupStdioTransport ? transport.exitStatus : undefined;
    return exit && new McpConnectionError(redact(describeExit(exit, stderr.lines())), { cause });
  };
  /**
   * Why the connection could not be made: the exit, or the error with what the server said on
   * stderr; over HTTP the network failure under "fetch failed" ("connection refused at <url>").
   */
  const failed = (err: unknown): Error => {
    const message = err instanceof Error ? err.message : String(err);
    const said = stderr.lines().length ? ` (stderr: ${stderr.lines().join(" | ")})` : "";
    const fetchFailed = err instanceof TypeError && message === "fetch failed";
    const network = kind === "stdio" ? undefined : describeNetworkError(err, shownUrl(server.url), fetchFailed);
    return exited(err) ?? new McpConnectionError(redact(network ?? `${message}${said}`), { cause: err });
  };
  let resolveClosed!: (error: Error | undefined) => void;
  const closed = new Promise<Error | undefined>((r) => (resolveClosed = r));
  let lastError: Error | undefined;
  client.onerror = (err) => {
    lastError = err;
    opts.onError?.(err);
  };
  client.onclose = () => resolveClosed(exited(lastError) ?? lastError);
  try {
    await client.connect(transport, { signal: opts.signal, timeout: opts.timeoutMs });
  } catch (err) {
    // Taken before close(), which ends the process itself.
    const error = failed(err);
    await client.close().catch(() => {});
    throw error;
  }
  const caps = client.getServerCapabilities() ?? {};
  return {
    client,
    kind,
    closed,
    explain: (error) => exited(error) ?? error,
    async list(signal) {
      const request = { signal, timeout: opts.timeoutMs };
      const listings = Promise.all([
        caps.tools ? listAll((cursor) => client.listTools({ cursor }, request).then((r) => ({ items: r.tools, nextCursor: r.nextCursor }))) : [],
        caps.resources ? listAll((cursor) => client.listResources({ cursor }, request).then((r) => ({ items: r.resources, nextCursor: r.nextCursor }))) : [],
        caps.prompts ? listAll((cursor) => client.listPrompts({ cursor }, request).then((r) => ({ items: r.prompts, nextCursor: r.nextCursor }))) : [],
      ]).catch((err: unknown) => {
        throw exited(err) ?? err;
      });
      const [tools, resources, prompts] = await listings;
      return { tools, resources, prompts };
    },
    async close() {
      // A streamable HTTP session is ended on the server too (DELETE), when the server still answers.
      if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession().catch(() => {});
      await client.close().catch(() => {});
    },
  };
}
