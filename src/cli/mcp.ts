import pino from "pino";
import type { LoadedConfig } from "../config/index.js";
import { secretsOf } from "../log/redact.js";
import { createMcpHub, type McpServerStatus } from "../mcp/hub.js";
import { createToolRegistry } from "../tools/registry.js";
import { connectDaemon } from "./client.js";

/** How long `troupe mcp list` without a daemon waits for each server. */
const PROBE_TIMEOUT_MS = 20_000;

const ago = (ms: number) => (ms < 60_000 ? `${Math.round(ms / 1000)}s` : `${Math.round(ms / 60_000)}m`);

export function mcpTable(servers: McpServerStatus[], now = Date.now()): string[] {
  const rows = [
    ["NAME", "TRANSPORT", "STATE", "TOOLS", "RESOURCES", "PROMPTS", "SINCE", "LAST ERROR"],
    ...servers.map((s) => [s.name, s.transport, s.state, String(s.tools), String(s.resources), String(s.prompts), ago(now - s.since), s.lastError ?? "-"]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  ").trimEnd());
}

/** Connects to each server once (in parallel), as the daemon would, and reports what it found. */
async function probe(loaded: LoadedConfig): Promise<McpServerStatus[]> {
  const hub = createMcpHub({ servers: loaded.config.tools.mcpServers, registry: createToolRegistry(), logger: pino({ level: "silent" }), connectTimeoutMs: PROBE_TIMEOUT_MS, secrets: secretsOf(loaded.config), ssrfWhitelist: loaded.config.tools.ssrfWhitelist });
  try {
    await Promise.all(
      hub.names().map((name) =>
        hub.connect(name, AbortSignal.timeout(PROBE_TIMEOUT_MS)).then(
          () => hub.report(name, "ready", null),
          (err: Error) => hub.report(name, "failed", err.message),
        ),
      ),
    );
    return hub.status();
  } finally {
    await hub.close();
  }
}

/**
 * `troupe mcp list`: the running daemon's servers (live state), or, with no daemon, each server
 * connected to once. Exit 1 when a server failed.
 */
export async function listMcpCommand(loaded: LoadedConfig): Promise<number> {
  if (!Object.keys(loaded.config.tools.mcpServers).length) {
    console.log(`no MCP servers configured (tools.mcpServers in ${loaded.paths.configFile})`);
    return 0;
  }
  const client = await connectDaemon(loaded.paths);
  let servers: McpServerStatus[];
  if (client) {
    servers = (await client.get<{ servers: McpServerStatus[] }>("/api/mcp")).servers;
    console.log(`MCP servers of the running daemon (pid ${client.pid}):`);
  } else {
    console.log("troupe daemon is not running; connecting to each server once:");
    servers = await probe(loaded);
  }
  for (const line of mcpTable(servers)) console.log(line);
  return servers.some((s) => s.state === "failed") ? 1 : 0;
}
