import { request as httpRequest, type IncomingMessage } from "node:http";
import type * as Https from "node:https";
import type * as Zlib from "node:zlib";
import { lazyRequire } from "../builtin.js";
import { ToolError } from "./contract.js";
import type { SsrfGuard } from "./ssrf.js";
import { webProxyAgent } from "./web-proxy.js";

/** Loaded at the first https:// or compressed page (most turns fetch none). */
const https = lazyRequire<typeof Https>("node:https");
const zlib = lazyRequire<typeof Zlib>("node:zlib");

export interface FetchedPage {
  url: string;
  finalUrl: string;
  status: number;
  contentType: string;
  body: Buffer;
  /** The body hit maxBytes and was cut. */
  cut: boolean;
}

export interface GuardedFetchOptions {
  guard: SsrfGuard;
  signal: AbortSignal;
  maxRedirects?: number;
  maxBytes?: number;
  timeoutMs?: number;
  userAgent?: string;
  /** tools.web.proxy: requests go through it (every hop's address is still checked first). */
  proxy?: string | null;
}

const DEFAULT_UA = "Mozilla/5.0 (compatible; troupe/0.1; +https://github.com/troupe)";

function decoded(res: IncomingMessage): NodeJS.ReadableStream {
  const encoding = String(res.headers["content-encoding"] ?? "").toLowerCase();
  if (encoding === "gzip" || encoding === "x-gzip") return res.pipe(zlib().createGunzip());
  if (encoding === "deflate") return res.pipe(zlib().createInflate());
  if (encoding === "br") return res.pipe(zlib().createBrotliDecompress());
  return res;
}

function once(url: URL, opts: GuardedFetchOptions): Promise<{ res: IncomingMessage; body?: Buffer; cut: boolean }> {
  const request = url.protocol === "https:" ? https().request : httpRequest;
  const maxBytes = opts.maxBytes ?? 5 * 1024 * 1024;
  const agent = webProxyAgent(opts.proxy, url);
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: "GET",
      headers: { "user-agent": opts.userAgent ?? DEFAULT_UA, accept: "text/html,application/xhtml+xml,application/json,text/plain;q=0.9,*/*;q=0.5", "accept-encoding": "gzip, deflate, br" },
      // Through a proxy the connection is to the proxy (the target was checked above); direct, the
      // guard's lookup refuses an internal answer at connect time.
      ...(agent ? { agent } : { lookup: opts.guard.lookup }),
      signal: opts.signal,
      timeout: opts.timeoutMs ?? 30_000,
    });
    req.on("timeout", () => req.destroy(new ToolError(`${url.href} did not answer within ${(opts.timeoutMs ?? 30_000) / 1000}s`)));
    req.on("error", reject);
    req.on("response", (res) => {
      if (res.statusCode && res.statusCode >= 300 && res.statusCode < 400 && res.headers.location) {
        res.resume();
        return resolve({ res, cut: false });
      }
      const chunks: Buffer[] = [];
      let size = 0;
      let cut = false;
      const stream = decoded(res);
      stream.on("data", (chunk: Buffer) => {
        if (cut) return;
        chunks.push(chunk);
        size += chunk.length;
        if (size >= maxBytes) {
          cut = true;
          req.destroy();
          resolve({ res, body: Buffer.concat(chunks).subarray(0, maxBytes), cut });
        }
      });
      stream.on("end", () => resolve({ res, body: Buffer.concat(chunks), cut }));
      stream.on("error", (err) => (cut ? undefined : reject(err)));
    });
    req.end();
  });
}

/** GET with the SSRF guard checked on the first URL and on every redirect. */
export async function guardedFetch(url: string, opts: GuardedFetchOptions): Promise<FetchedPage> {
  let current: URL;
  try {
    current = new URL(url);
  } catch {
    throw new ToolError(`not a valid URL: ${url}`);
  }
  const maxRedirects = opts.maxRedirects ?? 5;
  for (let hop = 0; ; hop++) {
    await opts.guard.assertPublicUrl(current);
    const { res, body, cut } = await once(current, opts);
    if (body === undefined) {
      if (hop >= maxRedirects) throw new ToolError(`too many redirects (more than ${maxRedirects}) starting at ${url}`);
      current = new URL(String(res.headers.location), current);
      continue;
    }
    return {
      url,
      finalUrl: current.href,
      status: res.statusCode ?? 0,
      contentType: String(res.headers["content-type"] ?? "").toLowerCase(),
      body,
      cut,
    };
  }
}
