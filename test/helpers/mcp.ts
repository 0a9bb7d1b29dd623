import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import pino, { type Logger } from "pino";
import { createActor } from "xstate";
import { createMcpLogic, mcpActorId } from "../../actors/mcp.js";
import { configSchema } from "../../src/config/schema.js";
import type { McpServerConfig } from "../../src/config/tools-schema.js";
import { createMcpHub } from "../../src/mcp/hub.js";
import { createToolRegistry } from "../../src/tools/registry.js";
import type { Tool } from "../../src/tools/contract.js";

export const MCP_FIXTURE = fileURLToPath(new URL("../fixtures/mcp-server.ts", import.meta.url));
const REPO = fileURLToPath(new URL("../..", import.meta.url));

/** tools.ssrfWhitelist for the fixtures on 127.0.0.1 (nanobot, too, refuses a loopback MCP URL without it). */
export const LOOPBACK_WHITELIST = ["127.0.0.1/32"];

/** A config entry that starts the stdio fixture (through tsx) and logs its calls to `logFile`. */
export function stdioFixture(logFile: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return { command: process.execPath, args: ["--import", "tsx", MCP_FIXTURE], cwd: REPO, env: { MCP_FIXTURE_LOG: logFile }, ...over };
}

/** The fixture's log: one entry per event. */
export async function fixtureLog(file: string): Promise<Array<{ tool?: string; event: string; pid: number; [k: string]: unknown }>> {
  const text = await readFile(file, "utf8").catch(() => "");
  return text
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { tool?: string; event: string; pid: number });
}

/** Parses server entries through the real config schema (defaults and validation). */
export const parseServers = (servers: Record<string, Record<string, unknown>>): Record<string, McpServerConfig> =>
  configSchema.parse({ tools: { mcpServers: servers } }).tools.mcpServers;

/** A hub with its server actors running on their own, as `troupe agent` runs them. */
export function startHub(
  servers: Record<string, Record<string, unknown>>,
  opts: { builtins?: Tool[]; logger?: Logger; policy?: Partial<{ maxRestarts: number; windowMs: number; baseDelayMs: number; maxDelayMs: number }> } = {},
) {
  const registry = createToolRegistry(opts.builtins ?? [], { maxResultChars: 2_000 });
  // The HTTP fixtures listen on 127.0.0.1, which an MCP server may be at only when whitelisted.
  const hub = createMcpHub({ servers: parseServers(servers), registry, logger: opts.logger ?? pino({ level: "silent" }), connectTimeoutMs: 30_000, ssrfWhitelist: LOOPBACK_WHITELIST });
  const policy = { maxRestarts: 5, windowMs: 60_000, baseDelayMs: 50, maxDelayMs: 1_000, ...opts.policy };
  const actors = hub.names().map((name) => createActor(createMcpLogic({ hub }), { id: mcpActorId(name), input: { name, policy } }).start());
  return {
    registry,
    hub,
    actors,
    state: (name: string) => hub.status().find((s) => s.name === name)?.state,
    async stop() {
      actors.forEach((a) => a.stop());
      await hub.close();
    },
  };
}

/** Whether a process with this id exists (signal 0 reaches it). */
export const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
