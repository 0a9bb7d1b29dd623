/**
 * One provider's chat-completions endpoint over our own HTTP transport (transport.ts): the request
 * the openai SDK would send (URL, key, extraHeaders; the JSON body request-body.ts encodes), its reply parsed as the SDK parses
 * it (JSON or text; server-sent events up to [DONE]), and its failures as the SDK's error classes
 * (APIError with status, body and headers; APIConnectionError whose cause is Node's error with its
 * code), so retry rules and error messages read them unchanged.
 */
import type { IncomingHttpHeaders } from "node:http";
import { loadOpenAiErrors } from "./openai-sdk.js";
import { chatEndpoint, type ResolvedProvider } from "./registry.js";
import { createHttpTransport, createSseParser, readText, type AbortSource, type HttpReply, type SseEvent } from "./transport.js";

export interface ChatHttp {
  /** A non-streamed completion of a request (its JSON's bytes: encodeRequest): the body as JSON when the server says it is JSON, else as text. */
  complete(payload: Buffer[], signal: AbortSource, touch: () => void): Promise<unknown>;
  /** A streamed completion: each event's JSON until [DONE]. */
  stream(payload: Buffer[], signal: AbortSource, touch: () => void): AsyncGenerator<unknown>;
  /** Closes idle kept-alive connections. */
  close(): void;
}

/** The SDK's view of response headers (`get`), over Node's header object. */
const headerView = (headers: IncomingHttpHeaders) => ({
  get(name: string): string | null {
    const value = headers[name.toLowerCase()];
    return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
  },
});

const safeJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

/** Redirects followed in a row before the last one is reported instead. */
const MAX_REDIRECTS = 5;

/**
 * Where a 307/308 sends the request (method and body kept, as fetch followed them), if it is an
 * http(s) URL that does not fall from https to http. 301/302/303 are not followed: fetch turned them
 * into a GET without the body, which no chat endpoint answers; the error names where they point.
 */
function redirectTarget(reply: HttpReply, from: URL): URL | undefined {
  if (reply.status !== 307 && reply.status !== 308) return undefined;
  const location = reply.headers.location;
  if (!location) return undefined;
  let next: URL;
  try {
    next = new URL(location, from);
  } catch {
    return undefined;
  }
  if (next.protocol !== "https:" && !(next.protocol === "http:" && from.protocol === "http:")) return undefined;
  return next;
}

/** The headers without the provider's key, for a hop to another origin. */
const withoutCredentials = (headers: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(headers).filter(([name]) => !["authorization", "api-key", "x-api-key", "proxy-authorization", "cookie"].includes(name)));

export function createChatHttp(resolved: ResolvedProvider): ChatHttp {
  const endpoint = chatEndpoint(resolved);
  const url = new URL(endpoint.url);
  const headers: Record<string, string> = { accept: "application/json", "content-type": "application/json", "user-agent": "troupe" };
  // Read from the environment as the openai SDK read them (an account's organization and project).
  if (process.env.OPENAI_ORG_ID) headers["openai-organization"] = process.env.OPENAI_ORG_ID;
  if (process.env.OPENAI_PROJECT_ID) headers["openai-project"] = process.env.OPENAI_PROJECT_ID;
  // extraHeaders may override any of ours (as the SDK's defaultHeaders did), whatever their case.
  for (const [name, value] of Object.entries(endpoint.headers)) headers[name.toLowerCase()] = value;
  const transport = createHttpTransport();

  /** The response, or the failure the SDK would have thrown: an error status with its body, or the connection's error. */
  async function send(payload: Buffer[], signal: AbortSource, touch: () => void): Promise<HttpReply> {
    let at = url;
    let sent = headers;
    let reply: HttpReply;
    for (let hops = 0; ; hops++) {
      try {
        reply = await transport.post(at, sent, payload, signal, touch);
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        const { APIConnectionError } = await loadOpenAiErrors();
        throw new APIConnectionError({ cause: err as Error });
      }
      const next = hops < MAX_REDIRECTS ? redirectTarget(reply, at) : undefined;
      if (!next) break;
      reply.discard();
      // As fetch does: the same POST and body; the key stays with the origin it was configured for.
      if (next.origin !== at.origin) sent = withoutCredentials(sent);
      at = next;
    }
    if (reply.status >= 200 && reply.status < 300) return reply;
    const text = await readText(reply.body, touch).catch((err: Error) => err.message);
    if (signal.aborted) throw signal.reason;
    const json = safeJson(text);
    const { APIError } = await loadOpenAiErrors();
    throw APIError.generate(reply.status, json as object | undefined, json === undefined ? text : undefined, headerView(reply.headers) as unknown as Headers);
  }

  return {
    async complete(payload, signal, touch) {
      const reply = await send(payload, signal, touch);
      let text: string;
      try {
        text = await readText(reply.body, touch);
      } catch (err) {
        reply.discard();
        throw signal.aborted ? signal.reason : err;
      }
      if (signal.aborted) throw signal.reason;
      if (reply.status === 204) return null;
      const mediaType = String(reply.headers["content-type"] ?? "").split(";")[0]!.trim();
      if (!mediaType.includes("application/json") && !mediaType.endsWith("+json")) return text;
      if (reply.headers["content-length"] === "0") return undefined;
      return JSON.parse(text);
    },
    async *stream(payload, signal, touch) {
      const reply = await send(payload, signal, touch);
      let done = false;
      /**
       * The events' JSON, in order, into `out`; what ends the reply early (an error event, a bad
       * event) is returned, to be thrown once the events before it are passed on. After [DONE] the
       * rest is read to the end, so the connection can be reused.
       */
      const dataOf = (events: SseEvent[], out: unknown[]): (() => Promise<never>) | undefined => {
        for (const sse of events) {
          if (done) continue;
          if (sse.data.startsWith("[DONE]")) {
            done = true;
            continue;
          }
          let data: { error?: unknown; message?: unknown } | null;
          try {
            data = JSON.parse(sse.data) as typeof data;
          } catch (err) {
            return () => Promise.reject(err as Error);
          }
          if (data && (data.error || sse.event === "error")) {
            const failed = data;
            return async () => {
              const { APIError } = await loadOpenAiErrors();
              throw new APIError(undefined, (failed.error ?? failed) as object, typeof failed.message === "string" ? failed.message : undefined, headerView(reply.headers) as unknown as Headers);
            };
          }
          out.push(data);
        }
        return undefined;
      };
      // A reply left early (an abort, a bad event, the reader stopping) has its connection closed, not reused.
      let ended = false;
      try {
        // Chunks straight into a synchronous parser: no generator between the body and the events.
        const parser = createSseParser();
        const out: unknown[] = [];
        for await (const chunk of reply.body) {
          touch();
          const failure = dataOf(parser.push(chunk), out);
          for (const data of out) yield data;
          out.length = 0;
          if (failure) await failure();
        }
        const failure = dataOf(parser.end(), out);
        for (const data of out) yield data;
        if (failure) await failure();
        ended = true;
      } finally {
        if (!ended) reply.discard();
      }
      if (signal.aborted) throw signal.reason;
    },
    close: () => transport.close(),
  };
}
