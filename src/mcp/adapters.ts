import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ErrorCode, McpError, type CallToolResult, type GetPromptResult, type ReadResourceResult } from "@modelcontextprotocol/sdk/types.js";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ToolError, type Tool, type ToolContext } from "../tools/contract.js";
import { TOOL_RESULTS_DIR } from "../tools/persist-result.js";
import type { Listings } from "./connection.js";
import { enabledFilter, mcpPromptToolName, mcpResourceToolName, mcpToolName, uniqueNames } from "./names.js";
import { normalizeInputSchema } from "./schema.js";

/** What a tool of a server needs from the hub at call time. */
export interface ServerAccess {
  server: string;
  timeoutMs: number;
  /** The live client, or a ToolError naming the server and its state. */
  client(): Client;
  /** A call on `client` failed in a way that says the connection is gone: the hub reconnects. */
  lost(client: Client, error: Error): void;
  /** Resolves once the server is ready again (a new connection), rejects past `ms` or when it fails. */
  ready(ms: number): Promise<void>;
}

/** How long a call that never reached the server waits for the reconnection before its one retry. */
const RETRY_WAIT_MS = 15_000;

/** Errors that mean the session or the connection is gone, not that the call failed (nanobot's list, and the SDK's words). */
export function isConnectionLoss(err: unknown): boolean {
  if (err instanceof McpError && err.code === ErrorCode.ConnectionClosed) return true;
  const text = `${(err as Error)?.message ?? ""} ${String((err as { cause?: { code?: string } })?.cause?.code ?? "")}`.toLowerCase();
  return /session terminated|session not found|connection closed|not connected|econnrefused|econnreset|fetch failed|socket hang up|epipe|process is not running/.test(text);
}

/**
 * The server never saw the request: its session is unknown to it (it restarted: HTTP 404
 * "Session not found") or nothing listens. Safe to send again, whatever the tool does.
 */
export function notDelivered(err: unknown): boolean {
  const text = `${(err as Error)?.message ?? ""} ${String((err as { cause?: { code?: string } })?.cause?.code ?? "")}`.toLowerCase();
  return (err as { code?: unknown })?.code === 404 || /session not found|econnrefused/.test(text);
}

/**
 * Runs one request with the server's timeout and the turn's signal; failures become ToolErrors the
 * model can read. After a lost connection the request is sent once more on the new one (nanobot
 * retries a transient failure once) when that cannot repeat an effect: the server never received
 * it (it restarted), or the tool is read-only or idempotent (the rule of crash recovery too).
 */
async function request<T>(
  access: ServerAccess,
  what: string,
  ctx: ToolContext,
  safeToRepeat: boolean,
  run: (client: Client, opts: { signal: AbortSignal; timeout: number }) => Promise<T>,
): Promise<T> {
  const client = access.client();
  try {
    return await run(client, { signal: ctx.signal, timeout: access.timeoutMs });
  } catch (err) {
    const retry = notDelivered(err) || (safeToRepeat && isConnectionLoss(err));
    if (ctx.signal.aborted || !retry) return failed(access, client, what, ctx, err);
    access.lost(client, err as Error);
    try {
      await access.ready(Math.min(RETRY_WAIT_MS, access.timeoutMs));
    } catch {
      return failed(access, client, what, ctx, err);
    }
    const next = access.client();
    try {
      return await run(next, { signal: ctx.signal, timeout: access.timeoutMs });
    } catch (again) {
      return failed(access, next, what, ctx, again);
    }
  }
}

/** A failed request as the model reads it (the turn's own cancellation goes up as it is). */
function failed(access: ServerAccess, client: Client, what: string, ctx: ToolContext, err: unknown): never {
  if (ctx.signal.aborted || err instanceof ToolError) throw err;
  if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
    throw new ToolError(`${what} on MCP server "${access.server}" timed out after ${access.timeoutMs / 1000}s (its toolTimeout) and was cancelled`);
  }
  if (isConnectionLoss(err)) {
    access.lost(client, err as Error);
    throw new ToolError(`MCP server "${access.server}" lost its connection during ${what} (${(err as Error).message}); troupe is reconnecting it, try again shortly`);
  }
  throw new ToolError(`${what} on MCP server "${access.server}" failed: ${(err as Error).message}`);
}

/** An image part saved under the workspace, so the model (and read_file) can reach it. */
async function saveImage(data: string, mimeType: string, ctx: ToolContext, index: number): Promise<string> {
  const ext = (mimeType.split("/")[1] ?? "bin").replace(/[^a-z0-9]/gi, "").slice(0, 8) || "bin";
  const relative = join(TOOL_RESULTS_DIR, `${ctx.turnId}-${ctx.callId}-${index}.${ext}`.replace(/[^\w./-]+/g, "_"));
  try {
    await mkdir(join(ctx.workspace, TOOL_RESULTS_DIR), { recursive: true });
    await writeFile(join(ctx.workspace, relative), Buffer.from(data, "base64"));
    return `[image ${mimeType}, ${Math.round((data.length * 3) / 4)} bytes, saved at ${relative} in the workspace]`;
  } catch (err) {
    return `[image ${mimeType}: could not be saved (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})]`;
  }
}

/** Text parts joined; images saved to files; embedded resources inlined; structured content as JSON when nothing else says it. */
export async function formatCallResult(result: CallToolResult, ctx: ToolContext): Promise<string> {
  const parts: string[] = [];
  for (const [i, part] of (result.content ?? []).entries()) {
    if (part.type === "text") parts.push(part.text);
    else if (part.type === "image") parts.push(await saveImage(part.data, part.mimeType, ctx, i));
    else if (part.type === "audio") parts.push(`[audio ${part.mimeType}, ${Math.round((part.data.length * 3) / 4)} bytes]`);
    else if (part.type === "resource") parts.push("text" in part.resource ? String(part.resource.text) : `[binary resource ${part.resource.uri}]`);
    else if (part.type === "resource_link") parts.push(`[resource ${part.uri}${part.name ? ` (${part.name})` : ""}]`);
  }
  let text = parts.join("\n");
  if (result.structuredContent !== undefined && text.trim() === "") text = JSON.stringify(result.structuredContent);
  if (result.isError) throw new ToolError(text || "the MCP tool reported an error without a message");
  return text;
}

function resourceText(result: ReadResourceResult): string {
  return result.contents.map((c) => ("text" in c ? String(c.text) : `[binary resource ${c.uri}${c.mimeType ? `, ${c.mimeType}` : ""}, ${Math.round((String(c.blob).length * 3) / 4)} bytes]`)).join("\n");
}

function promptText(result: GetPromptResult): string {
  return result.messages
    .map((m) => {
      const c = m.content;
      const body = c.type === "text" ? c.text : c.type === "resource" && "text" in c.resource ? String(c.resource.text) : `[${c.type}]`;
      return `${m.role}: ${body}`;
    })
    .join("\n\n");
}

const RESOURCE_LIST_MAX = 50;

/**
 * The registry tools for one server's listings: each allowed tool as mcp_<server>_<tool>, the
 * resources as one read-only mcp_<server>_read_resource {uri}, each prompt as mcp_<server>_prompt_<name>.
 */
export function toolsFor(listings: Listings, enabled: string[], access: ServerAccess): { tools: Tool[]; toolCount: number; unmatched: string[] } {
  const filter = enabledFilter(enabled);
  const server = access.server;
  const wrapped = uniqueNames(listings.tools.map((t) => mcpToolName(server, t.name)));
  const tools: Tool[] = [];
  listings.tools.forEach((def, i) => {
    const name = wrapped[i]!;
    if (!filter.tool(def.name, name)) return;
    const hints = def.annotations ?? {};
    tools.push({
      name,
      description: `${def.description ?? def.title ?? def.name} (MCP server ${server})`,
      parameters: { jsonSchema: normalizeInputSchema(def.inputSchema) },
      readOnly: hints.readOnlyHint === true,
      idempotent: hints.idempotentHint === true,
      source: "mcp",
      execute: async (args, ctx) => {
        const result = await request(access, `tool ${def.name}`, ctx, hints.readOnlyHint === true || hints.idempotentHint === true, (client, opts) => client.callTool({ name: def.name, arguments: args }, undefined, opts));
        return formatCallResult(result as CallToolResult, ctx);
      },
    });
  });
  const toolCount = tools.length;
  const resourceTool = mcpResourceToolName(server);
  if (listings.resources.length && filter.extra(resourceTool)) {
    const shown = listings.resources.slice(0, RESOURCE_LIST_MAX).map((r) => `- ${r.uri}: ${r.name}${r.description ? ` — ${r.description}` : ""}`);
    const more = listings.resources.length > RESOURCE_LIST_MAX ? `\n(and ${listings.resources.length - RESOURCE_LIST_MAX} more)` : "";
    tools.push({
      name: resourceTool,
      description: `Read a resource of MCP server ${server} by its uri. Resources:\n${shown.join("\n")}${more}`,
      parameters: { jsonSchema: { type: "object", properties: { uri: { type: "string", description: "the resource's uri" } }, required: ["uri"] } },
      readOnly: true,
      source: "mcp",
      execute: async (args, ctx) => resourceText(await request(access, `reading ${String(args.uri)}`, ctx, true, (client, opts) => client.readResource({ uri: String(args.uri) }, opts))),
    });
  }
  for (const prompt of listings.prompts) {
    const name = mcpPromptToolName(server, prompt.name);
    if (!filter.extra(name)) continue;
    const args = prompt.arguments ?? [];
    tools.push({
      name,
      description: `${prompt.description ?? prompt.name} (MCP prompt of server ${server}; returns the prompt's messages as text)`,
      parameters: {
        jsonSchema: {
          type: "object",
          properties: Object.fromEntries(args.map((a) => [a.name, { type: "string", ...(a.description ? { description: a.description } : {}) }])),
          required: args.filter((a) => a.required).map((a) => a.name),
        },
      },
      readOnly: true,
      source: "mcp",
      execute: async (input, ctx) => {
        const strings = Object.fromEntries(Object.entries(input).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]));
        return promptText(await request(access, `prompt ${prompt.name}`, ctx, true, (client, opts) => client.getPrompt({ name: prompt.name, arguments: strings }, opts)));
      },
    });
  }
  const raws = [...listings.tools.map((t) => t.name)];
  const all = [...wrapped, resourceTool, ...listings.prompts.map((p) => mcpPromptToolName(server, p.name))];
  return { tools, toolCount, unmatched: filter.unmatched(raws, all) };
}
