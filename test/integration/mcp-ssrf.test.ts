import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { parseServers } from "../helpers/mcp.js";
import { startHttpFixture, type HttpFixture } from "../fixtures/mcp-server.js";
import { createMcpHub, type McpHub } from "../../src/mcp/hub.js";
import { guardedMcpFetch } from "../../src/mcp/safe-fetch.js";
import { createSsrfGuard } from "../../src/tools/ssrf.js";
import { createToolRegistry } from "../../src/tools/registry.js";

/**
 * MCP servers over HTTP pass the same SSRF check as web_fetch, before any connection and on every
 * redirect; tools.ssrfWhitelist lets a local or private one through. nanobot: tests/tools/
 * test_mcp_tool.py test_connect_mcp_servers_rejects_unsafe_http_urls_before_probe,
 * test_validate_mcp_request_url_rejects_loopback_without_whitelist,
 * test_connect_mcp_servers_http_clients_reject_unsafe_redirect_targets.
 */

const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((c) => c()));
});

/** An HTTP server on `host` that records every connection and request; it answers `redirectTo` with a 307, else 404. */
async function recordingServer(host: string, redirectTo?: string) {
  const seen = { connections: 0, requests: [] as string[] };
  const server: Server = createServer((req, res) => {
    seen.requests.push(req.url ?? "");
    if (redirectTo) res.writeHead(307, { location: redirectTo }).end();
    else res.writeHead(404).end();
  });
  server.on("connection", () => seen.connections++);
  await new Promise<void>((r) => server.listen(0, host, r));
  closing.push(() => new Promise((r) => server.close(() => r())));
  return { seen, origin: `http://${host}:${(server.address() as AddressInfo).port}` };
}

async function connect(servers: Record<string, Record<string, unknown>>, ssrfWhitelist?: string[]) {
  const hub: McpHub = createMcpHub({ servers: parseServers(servers), registry: createToolRegistry(), logger: pino({ level: "silent" }), connectTimeoutMs: 20_000, ssrfWhitelist });
  closing.push(() => hub.close());
  return hub.connect(hub.names()[0]!).then(
    () => undefined,
    (err: Error) => err,
  );
}

describe("MCP over HTTP: the SSRF check", () => {
  it.each([
    ["sse", "/sse"],
    ["streamableHttp", "/mcp"],
  ])("a %s server on loopback without a whitelist is refused before any connection, naming tools.ssrfWhitelist", async (type, path) => {
    const { seen, origin } = await recordingServer("127.0.0.1");
    const error = await connect({ local: { type, url: `${origin}${path}?token=abc` } });
    expect(error?.message).toBe(
      `blocked unsafe URL ${origin}${path}: refused to fetch 127.0.0.1: it is a loopback address. Only public addresses can be fetched; add it to tools.ssrfWhitelist if this is deliberate.`,
    );
    expect(seen).toEqual({ connections: 0, requests: [] });
  });

  it.each(["http://169.254.169.254/sse", "http://169.254.169.254/mcp"])("cloud metadata (%s) is refused", async (url) => {
    expect((await connect({ meta: { url } }))?.message).toMatch(/^blocked unsafe URL http:\/\/169\.254\.169\.254\/(sse|mcp): .*link-local.*tools\.ssrfWhitelist/);
  });

  it.each(["streamableHttp", "sse"] as const)("a %s server on 127.0.0.1 connects once tools.ssrfWhitelist holds it", async (kind) => {
    const fx: HttpFixture = await startHttpFixture({ kind });
    closing.push(() => fx.close());
    expect(await connect({ local: { url: fx.url } }, ["127.0.0.1/32"])).toBeUndefined();
  });

  it("a redirect from a whitelisted server to an address outside the whitelist is refused; the target never hears of it", async () => {
    const target = await recordingServer("127.0.0.2");
    const start = await recordingServer("127.0.0.1", `${target.origin}/private`);
    const error = await connect({ local: { type: "streamableHttp", url: `${start.origin}/mcp` } }, ["127.0.0.1"]);
    expect(error).toBeInstanceOf(Error);
    expect(start.seen.requests).toEqual(["/mcp"]);
    expect(target.seen).toEqual({ connections: 0, requests: [] });
  });

  it("the fetch the transports use checks every hop of a redirect it follows, and stops at an unsafe one", async () => {
    const target = await recordingServer("127.0.0.2");
    const start = await recordingServer("127.0.0.1", `${target.origin}/private`);
    const fetch = guardedMcpFetch(createSsrfGuard(["127.0.0.1"]));
    await expect(fetch(`${start.origin}/start`)).rejects.toThrow(`blocked unsafe URL ${target.origin}/private: refused to fetch 127.0.0.2: it is a loopback address`);
    expect(start.seen.requests).toEqual(["/start"]);
    expect(target.seen).toEqual({ connections: 0, requests: [] });
    // Without a whitelist the first URL is refused already (nanobot: ..._rejects_loopback_without_whitelist).
    await expect(guardedMcpFetch(createSsrfGuard([]))("http://127.0.0.1/private")).rejects.toThrow(/^blocked unsafe URL http:\/\/127\.0\.0\.1\/private: .*loopback/);
  });
});
