import { StoreLockedError, TroupeError } from "../errors.js";
import type { DataPaths } from "../paths.js";
import { readSse } from "../server/sse.js";
import { readToken } from "../server/token.js";
import { httpFetch, type HttpInit, type HttpResponse } from "./http.js";
import { checkGateway, type GatewayCheck } from "./pidfile.js";

/** The daemon went away (stopped, restarting, its connection broken): the same request may succeed once it is back. */
export class DaemonGoneError extends TroupeError {}

/** A message that reached a session's API chat (a message-tool send, a reply, a reply to a subagent's report). */
export interface ChatMessage {
  content: string;
  media: string[];
  /** Ids of the messages it answers (none for a message-tool send). */
  answers: string[];
  deliveryId: string;
  at: number;
}

export interface SendOptions {
  signal?: AbortSignal;
  /** The same key on a retried POST makes it the same message: taken once, answered once. */
  idempotencyKey?: string;
}

export interface DaemonClient {
  url: string;
  pid: number;
  /** Who answers: the daemon, or an in-process `troupe agent` lending its store (see agent-record.ts). */
  holder?: "daemon" | "agent";
  get<T>(path: string): Promise<T>;
  delete<T>(path: string): Promise<T>;
  post<T>(path: string, body?: unknown): Promise<T>;
  /** Sends a message to a session; events (progress, tool hints, messages) go to onEvent; resolves with the reply. */
  send(sessionKey: string, content: string, onEvent?: (event: string, data: Record<string, unknown>) => void, opts?: SendOptions): Promise<{ content: string; alreadySent: boolean }>;
  /**
   * Follows what reaches a session's API chat (GET /api/sessions/:key/events), from `since` on;
   * resolves when the stream is open, and `ended` when it ends (the daemon went away).
   */
  follow(sessionKey: string, since: number, onMessage: (m: ChatMessage) => void, signal?: AbortSignal): Promise<{ ended: Promise<void> }>;
}

/** A connection the daemon refused or broke (not an HTTP answer). */
const gone = (err: unknown, signal?: AbortSignal): never => {
  if (signal?.aborted || err instanceof TroupeError) throw err;
  throw new DaemonGoneError(`lost the connection to the daemon (${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message})`, { cause: err });
};

/** A client for the running gateway of this data dir, or undefined when none answers. */
export async function connectDaemon(paths: DataPaths, timeoutMs = 2_000, checked?: GatewayCheck): Promise<DaemonClient | undefined> {
  const check = checked ?? (await checkGateway(paths, timeoutMs));
  if (check.kind !== "ours" || !check.health) return undefined;
  const { info } = check;
  const token = await readToken(paths.tokenFile);
  if (!token) throw new TroupeError(`the daemon (pid ${info.pid}) runs but ${paths.tokenFile} is missing; restart it with: troupe daemon restart`);
  return { ...controlClient(info.url, info.pid, token), holder: "daemon" };
}

/** Whoever holds this data dir's store and serves its control API: the daemon, else an in-process `troupe agent`. */
export async function connectStoreHolder(paths: DataPaths, timeoutMs = 2_000): Promise<DaemonClient | undefined> {
  return (await connectDaemon(paths, timeoutMs)) ?? (await (await import("./agent-record.js")).connectAgent(paths, timeoutMs));
}

/** How long a command that found the store locked waits for its holder to serve the control API or let go. */
export const HOLDER_WAIT_MS = 10_000;

/**
 * The store, opened by `open`, or the client of the process that holds it. A process that has just
 * opened the store serves the control API a moment later (a starting daemon; a `troupe agent` lends it
 * once it has held it for 100 ms), or lets go without ever serving (a `troupe agent -m` answered
 * sooner, a `sessions` or `dream run` that opened it directly): while the store is locked, each pass
 * asks for the holder's API, then tries `open` again, until `ms` have passed (then the lock's error stands).
 */
export async function openOrReachHolder<T>(paths: DataPaths, open: () => Promise<T>, ms = HOLDER_WAIT_MS): Promise<{ opened: T } | { holder: DaemonClient }> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return { opened: await open() };
    } catch (err) {
      if (!(err instanceof StoreLockedError) || Date.now() >= deadline) throw err;
    }
    const holder = await connectStoreHolder(paths, 1_000).catch(() => undefined);
    if (holder) return { holder };
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A client for a control API at `url` (a gateway, or an in-process `troupe agent` serving one). */
export function controlClient(url: string, pid: number, token: string): DaemonClient {
  const headers = { authorization: `Bearer ${token}` };
  const request = async (path: string, init: HttpInit = {}) => {
    const res = await httpFetch(`${url}${path}`, { ...init, headers: { ...headers, ...init.headers } }).catch((err: unknown) => gone(err, init.signal ?? undefined));
    if (!res.ok) {
      const body = (await res.json().catch(() => ({}))) as { error?: string; retry?: string };
      const text = `daemon answered ${res.status}: ${body.error ?? res.statusText}`;
      // 503 is a daemon on its way out, unless it says its store is failing (retry: "later"): that is its answer.
      throw res.status === 503 && body.retry !== "later" ? new DaemonGoneError(text) : new TroupeError(text);
    }
    return res;
  };
  /** Server-sent events of a response; a stream broken under it is the daemon gone. */
  async function* events(res: HttpResponse, signal?: AbortSignal) {
    try {
      for await (const m of readSse(res.body)) {
        if (m.event === "shutting_down") throw new DaemonGoneError("the daemon is stopping");
        yield { event: m.event, data: m.data as Record<string, unknown> };
      }
    } catch (err) {
      gone(err, signal);
    }
  }
  return {
    url,
    pid,
    get: async <T>(path: string) => (await (await request(path)).json()) as T,
    delete: async <T>(path: string) => (await (await request(path, { method: "DELETE" })).json()) as T,
    post: async <T>(path: string, body: unknown = {}) =>
      (await (await request(path, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } })).json()) as T,
    async send(sessionKey, content, onEvent, opts = {}) {
      const res = await request(`/api/sessions/${encodeURIComponent(sessionKey)}/messages`, {
        method: "POST",
        body: JSON.stringify({ content }),
        headers: { "content-type": "application/json", ...(opts.idempotencyKey ? { "idempotency-key": opts.idempotencyKey } : {}) },
        signal: opts.signal,
      });
      for await (const { event, data } of events(res, opts.signal)) {
        if (event === "reply") return { content: String(data.content), alreadySent: data.alreadySent === true };
        if (event === "error") throw new TroupeError(String(data.error));
        onEvent?.(event, data);
      }
      throw new DaemonGoneError("the daemon closed the stream before replying (did it stop?)");
    },
    async follow(sessionKey, since, onMessage, signal) {
      const res = await request(`/api/sessions/${encodeURIComponent(sessionKey)}/events?since=${Math.max(0, Math.floor(since))}`, { signal });
      const stream = events(res, signal);
      // What the mailbox got since `since` comes first, then `ready`, then what arrives.
      for (;;) {
        const next = await stream.next();
        if (next.done) throw new DaemonGoneError("the daemon closed the event stream");
        if (next.value.event === "ready") break;
        if (next.value.event === "message") onMessage(next.value.data as unknown as ChatMessage);
      }
      const ended = (async () => {
        try {
          for await (const { event, data } of stream) if (event === "message") onMessage(data as unknown as ChatMessage);
        } catch {
          // Gone or aborted: the caller learns it from `ended`.
        }
      })();
      return { ended };
    },
  };
}
