import { request as httpRequest, type Agent } from "node:http";
import type * as Https from "node:https";
import { lazyRequire } from "../builtin.js";
import { proxyAgentFor } from "../proxy-agent.js";
import { ToolError } from "./contract.js";

const https = lazyRequire<typeof Https>("node:https");

/**
 * tools.web.proxy: every request of web_search and web_fetch goes through it. An http(s):// proxy
 * (CONNECT for https targets); a socks proxy is refused with a clear message rather than bypassed.
 */
export function webProxyAgent(proxy: string | null | undefined, target: URL): Agent | undefined {
  if (!proxy) return undefined;
  let url: URL;
  try {
    url = new URL(proxy);
  } catch {
    throw new ToolError(`tools.web.proxy ${JSON.stringify(proxy)} is not a URL; write it as http://host:port`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ToolError(`tools.web.proxy uses ${url.protocol.replace(":", "")}, which troupe does not support; use an http:// or https:// proxy`);
  }
  return proxyAgentFor(url, target.protocol === "https:");
}

export interface HttpTextOptions {
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  /** A JSON body (sent with content-type application/json). */
  json?: unknown;
  proxy?: string | null;
  signal: AbortSignal;
  timeoutMs: number;
}

/** One HTTP request (no redirects followed), through tools.web.proxy when set; the answer's status and text. */
export function httpText(target: string | URL, opts: HttpTextOptions): Promise<{ status: number; text: string }> {
  const url = new URL(target);
  const body = opts.json === undefined ? undefined : JSON.stringify(opts.json);
  const headers = { ...opts.headers, ...(body === undefined ? {} : { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) }) };
  const request = url.protocol === "https:" ? https().request : httpRequest;
  const agent = webProxyAgent(opts.proxy, url);
  return new Promise((resolve, reject) => {
    const req = request(url, { method: opts.method ?? "GET", headers, agent, signal: opts.signal, timeout: opts.timeoutMs });
    req.on("timeout", () => req.destroy(new ToolError(`${url.host} did not answer within ${opts.timeoutMs / 1000}s`)));
    req.on("error", (err) => reject(err instanceof ToolError || opts.signal.aborted ? err : new ToolError(`${url.host}: ${err.message}`)));
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.end(body);
  });
}
