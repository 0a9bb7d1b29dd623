/**
 * HTTP for model calls over node:http / node:https, one keep-alive Agent per provider client.
 * Global fetch would load undici (tens of ms at start-up) and run its Request/Response/WHATWG-stream
 * machinery on every call; a model call needs one POST, its status and headers, and the body as it
 * arrives, which Node's own client gives directly.
 */
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingHttpHeaders, type IncomingMessage, type RequestOptions } from "node:http";
import { urlToHttpOptions } from "node:url";
import type { LookupFunction, Socket } from "node:net";
import type * as Https from "node:https";
import type * as Zlib from "node:zlib";
import { lazyRequire } from "../builtin.js";

/** Loaded when a provider is called over https:// or a reply comes compressed (a local model over http:// needs neither). */
const https = lazyRequire<typeof Https>("node:https");
const zlib = lazyRequire<typeof Zlib>("node:zlib");

export interface HttpReply {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body, decompressed if the server compressed it anyway (nothing asks it to), as UTF-8 text. */
  body: AsyncIterable<string>;
  /** Ends the exchange early (closes its connection). */
  discard(): void;
}

/**
 * What aborts an exchange: an AbortSignal, or anything with its face for "abort" (a model call's
 * attempt uses a lighter one than an AbortController, whose EventTarget cost more to make than the
 * rest of the attempt's bookkeeping).
 */
export interface AbortSource {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

export interface HttpTransport {
  /**
   * POSTs `payload` (text, or its UTF-8 bytes in pieces written in order) to `url`. `touch` is called when the headers arrive (a body chunk is the
   * reader's to report). Aborting `signal` destroys the request and its socket and rejects (or
   * fails the body) with the signal's reason. Network failures reject with Node's error (its `code`:
   * ECONNREFUSED, ENOTFOUND…).
   */
  post(url: URL, headers: Record<string, string>, payload: string | Buffer[], signal: AbortSource, touch: () => void): Promise<HttpReply>;
  /** Closes idle kept-alive connections. */
  close(): void;
}

function decoded(res: IncomingMessage): NodeJS.ReadableStream {
  const encoding = String(res.headers["content-encoding"] ?? "").trim().toLowerCase();
  const stream =
    encoding === "gzip" || encoding === "x-gzip"
      ? res.pipe(zlib().createGunzip())
      : encoding === "deflate"
        ? res.pipe(zlib().createInflate())
        : encoding === "br"
          ? res.pipe(zlib().createBrotliDecompress())
          : res;
  if (stream !== res) res.once("error", (err) => (stream as NodeJS.ReadableStream & { destroy(e: Error): void }).destroy(err));
  stream.setEncoding("utf8");
  return stream;
}

export interface TransportOptions {
  /** A connection not made within this long fails with ETIMEDOUT (undici's default for fetch: 10 s). */
  connectTimeoutMs?: number;
  /** DNS lookup (tests stall it). */
  lookup?: LookupFunction;
}

export const CONNECT_TIMEOUT_MS = 10_000;

export function createHttpTransport(opts: TransportOptions = {}): HttpTransport {
  const connectTimeoutMs = opts.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
  // Free sockets are unref'd by Node's Agent: a kept-alive connection never holds the process open.
  const httpAgent = new HttpAgent({ keepAlive: true });
  let httpsAgent: Https.Agent | undefined;

  /** Fails the request if its new connection (lookup, TCP) is not made in time; a reused one is already made. */
  function boundConnect(req: ClientRequest, socket: Socket) {
    if (!socket.connecting) return;
    const timer = setTimeout(() => req.destroy(Object.assign(new Error(`could not connect within ${connectTimeoutMs / 1000} s`), { code: "ETIMEDOUT" })), connectTimeoutMs);
    const clear = () => clearTimeout(timer);
    socket.once("connect", clear);
    socket.once("close", clear);
  }

  /** Where a URL points, as request options, worked out once per URL object (a provider posts to the same one every call). */
  const targets = new WeakMap<URL, Pick<RequestOptions, "protocol" | "hostname" | "port" | "path" | "auth">>();
  function targetOf(url: URL) {
    let target = targets.get(url);
    if (target === undefined) {
      const { protocol, hostname, port, path, auth } = urlToHttpOptions(url);
      targets.set(url, (target = { protocol, hostname, port, path, ...(auth ? { auth } : {}) }));
    }
    return target;
  }

  function attempt(url: URL, headers: Record<string, string>, payload: string | Buffer[], signal: AbortSource, touch: () => void, fresh: boolean): Promise<HttpReply> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const target = targetOf(url);
      const secure = target.protocol === "https:";
      let length = 0;
      // Pieces' lengths are known; a string's bytes would be counted here, again by Node, and encoded a third time on the socket.
      if (typeof payload === "string") length = Buffer.byteLength(payload);
      else for (const piece of payload) length += piece.length;
      const req = (secure ? https().request : httpRequest)({
        ...target,
        method: "POST",
        headers: { ...headers, "content-length": String(length) },
        agent: secure ? (httpsAgent ??= new (https().Agent)({ keepAlive: true })) : httpAgent,
        ...(opts.lookup ? { lookup: opts.lookup } : {}),
      });
      req.once("socket", (socket: Socket) => boundConnect(req, socket));
      const onAbort = () => req.destroy(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason)));
      const cleanup = () => signal.removeEventListener("abort", onAbort);
      signal.addEventListener("abort", onAbort, { once: true });
      let answered = false;
      req.on("response", (res: IncomingMessage) => {
        answered = true;
        touch();
        res.once("close", cleanup);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: decoded(res) as AsyncIterable<string>, discard: () => req.destroy() });
      });
      req.on("error", (err: NodeJS.ErrnoException) => {
        if (answered) return; // the body's reader sees it
        cleanup();
        if (signal.aborted) return reject(signal.reason);
        // A kept-alive connection the server closed while it sat idle: the request never reached it, send it again on a new one.
        if (!fresh && req.reusedSocket && (err.code === "ECONNRESET" || err.code === "EPIPE")) {
          attempt(url, headers, payload, signal, touch, true).then(resolve, reject);
          return;
        }
        reject(err);
      });
      if (typeof payload === "string") req.end(payload);
      else {
        // Written before the request has its socket (Node assigns it on a later tick): they are held and go out together, in one writev.
        for (const piece of payload) req.write(piece);
        req.end();
      }
    });
  }

  return {
    post: (url, headers, payload, signal, touch) => attempt(url, headers, payload, signal, touch, false),
    close() {
      httpAgent.destroy();
      httpsAgent?.destroy();
    },
  };
}

/**
 * The whole body as text, touching per chunk. A Node stream (what post() gives) is read through its
 * events: its async iterator cost more per reply than the reading.
 */
export function readText(body: AsyncIterable<string>, touch: () => void): Promise<string> {
  const stream = body as Partial<NodeJS.ReadableStream>;
  if (typeof stream.on !== "function" || typeof stream.removeListener !== "function") return readIterable(body, touch);
  const readable = stream as NodeJS.ReadableStream & { destroyed?: boolean; readableEnded?: boolean; errored?: Error | null };
  if (readable.errored) return Promise.reject(readable.errored);
  const prematureClose = () => Object.assign(new Error("Premature close"), { code: "ERR_STREAM_PREMATURE_CLOSE" });
  // Destroyed before it is read: no event comes again.
  if (readable.destroyed && !readable.readableEnded) return Promise.reject(prematureClose());
  return new Promise((resolve, reject) => {
    let text = "";
    const onData = (chunk: string) => {
      touch();
      text += chunk;
    };
    const done = (err?: Error) => {
      readable.removeListener("data", onData);
      readable.removeListener("end", onEnd);
      readable.removeListener("error", onError);
      readable.removeListener("close", onClose);
      if (err) reject(err);
      else resolve(text);
    };
    const onEnd = () => done();
    const onError = (err: Error) => done(err);
    // Destroyed without an end or an error (an abort): what the async iterator reported as a premature close.
    const onClose = () => setImmediate(() => (readable.readableEnded ? done() : done(prematureClose())));
    readable.on("data", onData);
    readable.once("end", onEnd);
    readable.once("error", onError);
    readable.once("close", onClose);
    if (readable.readableEnded) done();
  });
}

async function readIterable(body: AsyncIterable<string>, touch: () => void): Promise<string> {
  let text = "";
  for await (const chunk of body) {
    touch();
    text += chunk;
  }
  return text;
}

export interface SseEvent {
  event: string | null;
  data: string;
}

/**
 * Server-sent events from text pieces (https://html.spec.whatwg.org/multipage/server-sent-events.html):
 * `data:` lines joined by newlines, dispatched at a blank line; comments and other fields ignored.
 * Synchronous: each piece gives the events it completes (a streamed reply's chunks pass through no
 * generator per line or per event).
 */
export interface SseParser {
  /** The events that `chunk` completes, in order. */
  push(chunk: string): SseEvent[];
  /** At the end of the text: the events its last lines complete. */
  end(): SseEvent[];
}

export function createSseParser(): SseParser {
  let pending = "";
  let data: string[] = [];
  let event: string | null = null;
  /** One line's field; an empty line dispatches the event gathered so far. */
  function take(line: string, out: SseEvent[]) {
    if (line === "") {
      if (data.length) out.push({ event, data: data.join("\n") });
      data = [];
      event = null;
      return;
    }
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(line[colon + 1] === " " ? colon + 2 : colon + 1);
    if (field === "data") data.push(value);
    else if (field === "event") event = value;
  }
  return {
    push(chunk) {
      const out: SseEvent[] = [];
      pending += chunk;
      let start = 0;
      // Each search result is kept until passed: a chunk of many lines and no \r is scanned once, not once a line.
      let lf = -2;
      let cr = -2;
      for (;;) {
        if (lf !== -1 && lf < start) lf = pending.indexOf("\n", start);
        if (cr !== -1 && cr < start) cr = pending.indexOf("\r", start);
        const end = cr < 0 ? lf : lf < 0 ? cr : Math.min(cr, lf);
        // A lone \r at the end of a chunk may be the first half of a CRLF: wait for the next chunk.
        if (end < 0 || (pending[end] === "\r" && end === pending.length - 1)) break;
        take(pending.slice(start, end), out);
        start = end + (pending[end] === "\r" && pending[end + 1] === "\n" ? 2 : 1);
      }
      pending = pending.slice(start);
      return out;
    },
    end() {
      const out: SseEvent[] = [];
      for (const line of pending.split(/\r\n|\r|\n/)) take(line, out);
      take("", out);
      pending = "";
      return out;
    },
  };
}

/** Server-sent events from a text stream (createSseParser), touching per chunk. */
export async function* sseEvents(body: AsyncIterable<string>, touch: () => void): AsyncGenerator<SseEvent> {
  const parser = createSseParser();
  for await (const chunk of body) {
    touch();
    yield* parser.push(chunk);
  }
  yield* parser.end();
}
