import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { filter } from "rxjs";
import type { Bus } from "../bus/index.js";
import type { Logger } from "../log/logger.js";
import { inboxId } from "../store/inbox.js";
import { sessionDetail, sessionsOverview } from "../store/session-view.js";
import { deleteSessionOps } from "../store/sessions.js";
import type { Store } from "../store/store.js";
import { listOpenTurns } from "../store/turns.js";
import { VERSION } from "../version.js";
import { allowedHosts, hostAllowed } from "./host-check.js";
import { HttpError, idempotencyKeyOf, json, messageBody, parseBody, readJson, sessionKeyOf, type ControlServer } from "./request-io.js";
import { openSse } from "./sse.js";
import { tokenMatches } from "./token.js";

/** What an in-process `troupe agent` lends the other commands of its data dir while it holds the store. */
export interface AgentHost {
  store: Store;
  bus: Bus;
  logger: Logger;
  dataDir: string;
  /**
   * Runs one message of a session in this process, after whatever of that session runs; resolves with the reply.
   * With its client's idempotency key, a message the daemon took in before it stopped is not run again: it gets its turn's reply.
   */
  run(sessionKey: string, content: string, idempotencyKey?: string): Promise<{ content: string; state?: string }>;
  /** False once the store is being handed over: new messages go to the daemon. */
  accepting(): boolean;
  /** Whether a message of the session is being answered or waits here. */
  busy(sessionKey: string): boolean;
  /** Finishes what runs, closes the store and hands the chat over to the daemon. */
  handOver(): Promise<void>;
}

/**
 * The control API of an in-process `troupe agent`: the same routes and token as the daemon's for
 * what the other commands need (health, sessions list/show/delete, messages in), plus
 * POST /api/handoff, with which a starting gateway takes the store over. Loopback only, port chosen
 * by the system, recorded in <data dir>/agent.json.
 */
export async function startAgentServer(host: AgentHost, token: string): Promise<ControlServer> {
  const startedAt = Date.now();
  let allowed = new Set<string>();
  /** Set once the server listens: the handoff closes it after answering. */
  const closing: { now?: () => void } = {};

  function postMessage(req: IncomingMessage, res: ServerResponse, key: string, content: string, idempotencyKey: string | undefined) {
    const sse = openSse(res);
    const sub = host.bus
      .ofType("progress", "tool_hint", "turn_state", "model_retry", "model_fallback")
      .pipe(filter((e) => e.sessionKey === key))
      .subscribe((e) => sse.send(e.type, e));
    req.on("close", () => sub.unsubscribe());
    // A keyed message has the id the daemon gives it (api:<key>): a client re-sending it after the daemon stopped is answered once.
    const id = idempotencyKey ? inboxId("api", idempotencyKey) : `agent:${startedAt}:${Math.random().toString(36).slice(2)}`;
    host.logger.info({ sessionKey: key, id }, "message from another troupe command");
    sse.send("accepted", { id, sessionKey: key });
    host.run(key, content, idempotencyKey).then(
      (reply) => {
        sub.unsubscribe();
        if (reply.state) sse.send("turn_state", { sessionKey: key, state: reply.state });
        sse.send("reply", { content: reply.content, answers: [id] });
        res.end();
      },
      (err: Error) => {
        sub.unsubscribe();
        sse.send("error", { error: err.message });
        res.end();
      },
    );
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!hostAllowed(allowed, req.headers.host)) throw new HttpError(421, `this server answers requests for ${[...allowed][0]} only`);
    const url = new URL(`http://localhost${req.url ?? "/"}`);
    const path = url.pathname;
    if (req.method === "GET" && path === "/health") {
      return json(res, 200, { ok: true, version: VERSION, pid: process.pid, dataDir: host.dataDir, uptimeMs: Date.now() - startedAt, role: "agent" });
    }
    if (!tokenMatches(req.headers.authorization, token)) {
      res.setHeader("www-authenticate", "Bearer");
      throw new HttpError(401, "missing or wrong bearer token (see <data dir>/gateway.token)");
    }
    if (req.method === "POST" && path === "/api/handoff") {
      await host.handOver();
      res.once("finish", () => closing.now?.());
      return json(res, 200, { released: true });
    }
    if (req.method === "GET" && path === "/api/sessions") {
      const { sessions, corrupt } = await sessionsOverview(host.store);
      return json(res, 200, { sessions: sessions.map((m) => ({ ...m, active: host.busy(m.key) })), corrupt });
    }
    const sessionMatch = /^\/api\/sessions\/([^/]+)(\/messages)?$/.exec(path);
    if (sessionMatch) {
      const key = sessionKeyOf(sessionMatch[1]!);
      if (req.method === "GET" && !sessionMatch[2]) {
        const detail = await sessionDetail(host.store, key, { allEpochs: url.searchParams.get("all") === "1" });
        if (!detail) throw new HttpError(404, `no session ${key}`);
        return json(res, 200, detail);
      }
      if (req.method === "DELETE" && !sessionMatch[2]) {
        if (host.busy(key) || (await listOpenTurns(host.store, key, { onCorrupt: () => {} })).length > 0) {
          throw new HttpError(409, `a turn of session ${key} is running in troupe agent (pid ${process.pid}); /stop it or wait for it to finish, then delete it`);
        }
        const deletion = await deleteSessionOps(host.store, key);
        if (!deletion) throw new HttpError(404, `no session ${key}`);
        await host.store.batch(deletion.ops, { sync: true });
        return json(res, 200, { deleted: key, ...deletion.counts });
      }
      if (req.method === "POST" && sessionMatch[2] === "/messages") {
        if (!host.accepting()) throw new HttpError(503, "troupe agent is handing the store over to the daemon; send it there in a moment");
        const idempotencyKey = idempotencyKeyOf(req);
        const { content } = parseBody(messageBody, await readJson(req));
        return postMessage(req, res, key, content, idempotencyKey);
      }
    }
    throw new HttpError(404, `no route ${req.method} ${path} on troupe agent (pid ${process.pid}); the daemon serves the rest (troupe daemon start)`);
  }

  const server = createServer((req, res) => {
    route(req, res).catch((err: unknown) => {
      const status = err instanceof HttpError ? err.status : 500;
      if (status === 500) host.logger.error({ err }, "agent control API error");
      if (res.headersSent) res.end();
      else json(res, status, { error: err instanceof Error ? err.message : String(err) });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  allowed = allowedHosts("127.0.0.1", port);
  // Answers already written reach their clients before the connections are cut.
  const close = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    await Promise.race([closed, new Promise((r) => setTimeout(r, 1_000).unref())]);
    server.closeAllConnections();
    await closed;
  };
  closing.now = () => void close();
  return { url: `http://127.0.0.1:${port}`, close };
}
