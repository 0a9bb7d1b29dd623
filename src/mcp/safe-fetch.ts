import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { SsrfError, type SsrfGuard } from "../tools/ssrf.js";
import { McpConnectionError } from "./failure.js";

/** A server's URL as errors show it: no credentials or query, where a token may be (as nanobot's _redact_url). */
export const shownUrl = (url: string | URL) => {
  const u = new URL(url);
  return `${u.protocol}//${u.host}${u.pathname}`;
};

const REDIRECTS = [301, 302, 303, 307, 308];
const MAX_REDIRECTS = 5;

/**
 * Refuses a URL that is not public, as web_fetch does (tools.ssrfWhitelist lets an address or range
 * through): an MCP server over HTTP is reached only after this check (nanobot: validate_url_target
 * before the probe, and on every request).
 */
export async function checkMcpUrl(guard: SsrfGuard, url: URL): Promise<void> {
  try {
    await guard.assertPublicUrl(url);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new McpConnectionError(err instanceof SsrfError ? `blocked unsafe URL ${shownUrl(url)}: ${why}` : `${shownUrl(url)}: ${why}`, { cause: err });
  }
}

/**
 * The fetch the MCP transports use: every URL it is asked for is checked first. The SDK follows a
 * redirect hop by hop through it (each hop checked); one it is asked to follow itself is followed
 * here the same way, and a hop to another origin drops the request's headers (they may hold the
 * server's credentials).
 */
export function guardedMcpFetch(guard: SsrfGuard, base: typeof fetch = fetch): FetchLike {
  return async (input, init) => {
    let url = new URL(input);
    if (init?.redirect === "manual" || init?.redirect === "error") {
      await checkMcpUrl(guard, url);
      return base(url, init);
    }
    let request: RequestInit = { ...init };
    for (let hop = 0; ; hop++) {
      await checkMcpUrl(guard, url);
      const response = await base(url, { ...request, redirect: "manual" });
      const location = REDIRECTS.includes(response.status) ? response.headers.get("location") : null;
      if (!location) return response;
      if (hop === MAX_REDIRECTS) throw new McpConnectionError(`too many redirects (more than ${MAX_REDIRECTS}) from ${shownUrl(input)}`);
      await response.body?.cancel();
      const next = new URL(location, url);
      const method = (request.method ?? "GET").toUpperCase();
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === "POST")) request = { ...request, method: "GET", body: undefined };
      if (next.origin !== url.origin) request = { ...request, headers: undefined };
      url = next;
    }
  };
}
