import { TroupeError } from "../errors.js";
import type { DataPaths } from "../paths.js";
import { readSse } from "../server/sse.js";
import { readToken } from "../server/token.js";
import { checkGateway, type GatewayCheck } from "./pidfile.js";

export interface DaemonClient {
  url: string;
  pid: number;
  get<T>(path: string): Promise<T>;
  delete<T>(path: string): Promise<T>;
  post<T>(path: string, body?: unknown): Promise<T>;
  /** Sends a message to a session; events (progress, tool hints, messages) go to onEvent; resolves with the reply. */
  send(sessionKey: string, content: string, onEvent?: (event: string, data: Record<string, unknown>) => void, signal?: AbortSignal): Promise<string>;
}

/** A client for the running gateway of this data dir, or undefined when none answers. */
export async function connectDaemon(paths: DataPaths, timeoutMs = 2_000, checked?: GatewayCheck): Promise<DaemonClient | undefined> {
  const check = checked ?? (await checkGateway(paths, timeoutMs));
  if (check.kind !== "ours" || !check.health) return undefined;
  const { info } = check;
  const token = await readToken(paths.tokenFile);
  if (!token) throw new TroupeError(`the daemon (pid ${info.pid}) runs but ${paths.tokenFile} is missing; restart it with: troupe daemon restart`);
  const headers = { authorization: `Bearer ${token}` };
  const request = async (path: string, init: RequestInit = {}) => {
    const res = await fetch(`${info.url}${path}`, { ...init, headers: { ...headers, ...(init.headers as Record<string, string>) } });
    if (!res.ok) {
      const body = (await res.json().catch(() => ({}))) as { error?: string };
      throw new TroupeError(`daemon answered ${res.status}: ${body.error ?? res.statusText}`);
    }
    return res;
  };
  return {
    url: info.url,
    pid: info.pid,
    get: async <T>(path: string) => (await (await request(path)).json()) as T,
    delete: async <T>(path: string) => (await (await request(path, { method: "DELETE" })).json()) as T,
    post: async <T>(path: string, body: unknown = {}) =>
      (await (await request(path, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } })).json()) as T,
    async send(sessionKey, content, onEvent, signal) {
      const res = await request(`/api/sessions/${encodeURIComponent(sessionKey)}/messages`, {
        method: "POST",
        body: JSON.stringify({ content }),
        headers: { "content-type": "application/json" },
        signal,
      });
      for await (const { event, data } of readSse(res.body!)) {
        const payload = data as Record<string, unknown>;
        if (event === "reply") return String(payload.content);
        if (event === "error") throw new TroupeError(String(payload.error));
        onEvent?.(event, payload);
      }
      throw new TroupeError("the daemon closed the stream before replying (did it stop?)");
    },
  };
}
