import type { Agent } from "node:http";
import { createRequire } from "node:module";
import type * as HttpProxy from "http-proxy-agent";
import type * as HttpsProxy from "https-proxy-agent";

/**
 * The node:http agent that sends requests through an http(s):// proxy: CONNECT for https targets,
 * absolute-URI requests for http ones. Used by channels.telegram.proxy and tools.web.proxy; the
 * agent packages load only when a proxy is configured.
 */
export function proxyAgentFor(proxy: string | URL, httpsTarget: boolean): Agent {
  const load = createRequire(import.meta.url);
  return httpsTarget
    ? new (load("https-proxy-agent") as typeof HttpsProxy).HttpsProxyAgent(proxy)
    : new (load("http-proxy-agent") as typeof HttpProxy).HttpProxyAgent(proxy);
}
