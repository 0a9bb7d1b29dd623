import { request as httpRequest, type IncomingMessage } from "node:http";

/**
 * The little of fetch the CLI needs to talk to its own control API on loopback, over node:http:
 * Node's fetch loads undici (~30 ms) on its first call, which was a tenth of `troupe agent -m`
 * through the daemon. Plain http:// only (what the gateway serves).
 */
export interface HttpResponse {
  ok: boolean;
  status: number;
  statusText: string;
  /** The body as it arrives (ends when the response does; throws when the connection breaks). */
  body: AsyncIterable<Uint8Array>;
  json(): Promise<unknown>;
  /** Drops a body nobody reads, so its connection ends. */
  discard(): void;
}

export interface HttpInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal | null;
}

/** Rejects with the connection's error (refused, reset, aborted) as fetch does with its cause. */
export function httpFetch(url: string, init: HttpInit = {}): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    // agent: false, a connection of its own closed after the response: no idle keep-alive socket holds the process open.
    const options = { method: init.method ?? "GET", headers: init.headers, agent: false, ...(init.signal ? { signal: init.signal } : {}) };
    const req = httpRequest(url, options, (res) => resolve(response(res)));
    req.on("error", reject);
    req.end(init.body);
  });
}

function response(res: IncomingMessage): HttpResponse {
  const status = res.statusCode ?? 0;
  return {
    ok: status >= 200 && status < 300,
    status,
    statusText: res.statusMessage ?? "",
    body: res,
    async json() {
      const chunks: Buffer[] = [];
      for await (const chunk of res as AsyncIterable<Buffer>) chunks.push(chunk);
      return JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
    },
    discard: () => void res.resume(),
  };
}
