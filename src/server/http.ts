import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AnyActorRef } from "xstate";
import { DREAM_ACTOR_ID, sessionActorId } from "../../machines/supervision.js";
import { memoryOverview } from "../memory/overview.js";
import type { AddressInfo } from "node:net";
import { apiReplies } from "../channels/api.js";
import { AttachmentError, takeAttachments } from "../channels/api-media.js";
import { TroupeError } from "../errors.js";
import type { Daemon } from "../daemon-types.js";
import { sessionDetail, sessionsOverview } from "../store/session-view.js";
import { deleteSessionOps } from "../store/sessions.js";
import { failureLine, StoreUnavailableError } from "../store/health.js";
import { VERSION } from "../version.js";
import { machines } from "../../machines/index.js";
import { machineGraphs } from "../inspect/graph.js";
import { createRedactor, secretsOf } from "../log/redact.js";
import type { ActorNode } from "./actor-view.js";
import { INSPECTION_EVENT_TYPES } from "./event-log.js";
import { turnDetail } from "./turn-view.js";
import { allowedHosts, hostAllowed } from "./host-check.js";
import { cronRoute, CronRouteError } from "./cron-routes.js";
import { openSse } from "./sse.js";
import { tokenMatches } from "./token.js";
import { channelHealth, channelLinks, failedChildren, heldNow, sessionBusy, subagentsUnder, supervision } from "./daemon-views.js";
import { serveInspector } from "./inspector-route.js";
import { messageStreams } from "./message-streams.js";
import { watchProcessMemory } from "./process-memory.js";
import { apiMessageBody, declaredWithinLimit, HttpError, idempotencyKeyOf, json, parseBody, pathSegment, readJson, refuseBody, refuseStore, sessionKeyOf, type ControlServer } from "./request-io.js";

export type { ControlServer } from "./request-io.js";

/**
 * The loopback control API: health, the live actor tree, sessions and their history, messages in
 * (answered as server-sent events), a stream of actor events, the machines' graphs and the inspector
 * page. Everything but /health and the inspector page's own files needs the bearer token from
 * <data dir>/gateway.token. It answers only requests addressed to its own host
 * (see allowedHosts) and sends no CORS headers: a web page gets nothing from it.
 */
export async function startControlServer(daemon: Daemon, opts: { host: string; port: number; token: string }): Promise<ControlServer> {
  const startedAt = Date.now();
  const { store, bus } = daemon;
  const withSubagents = (root: ActorNode) => {
    subagentsUnder(daemon)(root);
    supervision(daemon, root);
    channelLinks(daemon, root);
  };
  const graphs = machineGraphs(machines);
  const redactText = createRedactor(secretsOf(daemon.loaded.config));
  const memory = watchProcessMemory();

  const streams = messageStreams(daemon);

  let allowed = new Set<string>();

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!hostAllowed(allowed, req.headers.host)) {
      throw new HttpError(421, `this server answers requests for ${[...allowed][0]}, not Host ${JSON.stringify(req.headers.host ?? "")} (refused against DNS rebinding)`);
    }
    if (!req.url?.startsWith("/")) throw new HttpError(400, "the request target must be a path");
    const url = new URL(`http://localhost${req.url}`);
    const path = url.pathname;
    if (req.method === "GET" && path === "/health") {
      const { store: health, disk } = daemon.storage();
      const failing = health.state === "failing" && health.failure;
      return json(res, failing ? 503 : 200, {
        ok: !failing,
        version: VERSION,
        pid: process.pid,
        dataDir: daemon.loaded.paths.dataDir,
        uptimeMs: Date.now() - startedAt,
        store: { ...health, ...(failing ? { error: failureLine(failing, daemon.loaded.paths.dataDir) } : {}) },
        disk,
        channels: channelHealth(daemon, redactText),
      });
    }
    if (req.method === "GET" && (path === "/inspector" || path.startsWith("/inspector/"))) return serveInspector(res, path);
    if (!path.startsWith("/api/")) throw new HttpError(404, `no route ${req.method} ${path}`);
    if (!tokenMatches(req.headers.authorization, opts.token)) {
      res.setHeader("www-authenticate", "Bearer");
      throw new HttpError(401, "missing or wrong bearer token (see <data dir>/gateway.token)");
    }
    if (path.startsWith("/api/cron/")) {
      const answer = await cronRoute(daemon, req.method ?? "GET", path, () => readJson(req)).catch((err: unknown) => {
        throw err instanceof CronRouteError ? new HttpError(err.status, err.message) : err;
      });
      if (answer) return json(res, answer.status, answer.body);
    }
    const sessionMatch = /^\/api\/sessions\/([^/]+)(\/messages|\/replies|\/events)?$/.exec(path);
    if (req.method === "GET" && path === "/api/actors") {
      return json(res, 200, { root: daemon.tree.tree(withSubagents), failed: failedChildren(daemon), channels: daemon.channels(), turns: { running: daemon.limiter.active, waiting: daemon.limiter.waiting, max: daemon.limiter.max } });
    }
    if (req.method === "GET" && path === "/api/status") {
      return json(res, 200, { pid: process.pid, version: VERSION, uptimeMs: Date.now() - startedAt, memory: memory.read(), held: heldNow(daemon) });
    }
    if (req.method === "GET" && path === "/api/mcp") {
      return json(res, 200, { servers: daemon.mcp?.status() ?? [] });
    }
    if (req.method === "GET" && path === "/api/memory") {
      const state = (daemon.supervisor.getSnapshot().children[DREAM_ACTOR_ID] as AnyActorRef | undefined)?.getSnapshot().value;
      const overview = await memoryOverview(daemon.loaded.workspace, store);
      return json(res, 200, { ...overview, dream: { ...overview.dream, ...(state ? { state: String(state) } : {}) } });
    }
    if (req.method === "POST" && path === "/api/dream/run") return json(res, 200, { result: await daemon.memory.control.run() });
    if (req.method === "GET" && path === "/api/sessions") {
      const live = new Set((daemon.tree.tree()?.children ?? []).map((c) => c.id));
      const { sessions, corrupt } = await sessionsOverview(store);
      for (const c of corrupt) daemon.logger.warn({ record: `${c.sublevel}/${c.key}`, problem: c.problem }, "corrupt record skipped in a session listing");
      return json(res, 200, { sessions: sessions.map((m) => ({ ...m, active: live.has(sessionActorId(m.key)) })), corrupt });
    }
    if (req.method === "GET" && path === "/api/machines") return json(res, 200, { machines: graphs });
    const turnMatch = /^\/api\/turns\/([^/]+)$/.exec(path);
    if (req.method === "GET" && turnMatch) {
      const turnId = pathSegment(turnMatch[1]!);
      const detail = await turnDetail(store, turnId, redactText);
      if (!detail) throw new HttpError(404, `no turn ${turnId}`);
      return json(res, 200, detail);
    }
    if (req.method === "GET" && path === "/api/events") {
      const since = sinceMs(url.searchParams.get("since"), daemon.events.maxAgeMs);
      const sse = openSse(res);
      // Actor changes are followed (XState's inspection) only while someone watches: from now until this client leaves.
      // Watching again after a time nobody watched publishes an actor_gap first, so a replay says what it lacks.
      const release = daemon.tree.watch();
      // The replay first, then the tree as it is now, then every change as it happens.
      for (const e of since ? daemon.events.since(since) : []) sse.send(e.type, { ...e, replayed: true });
      sse.send("tree", daemon.tree.tree(withSubagents));
      const sub = bus.ofType(...INSPECTION_EVENT_TYPES).subscribe((e) => sse.send(e.type, e));
      const keepAlive = setInterval(() => sse.comment("keep-alive"), 15_000);
      req.on("close", () => {
        sub.unsubscribe();
        release();
        clearInterval(keepAlive);
      });
      return;
    }
    if (sessionMatch) {
      const key = sessionKeyOf(sessionMatch[1]!);
      if (req.method === "GET" && !sessionMatch[2]) {
        const detail = await sessionDetail(store, key, { allEpochs: url.searchParams.get("all") === "1" });
        if (!detail) throw new HttpError(404, `no session ${key}`);
        return json(res, 200, detail);
      }
      if (req.method === "DELETE" && !sessionMatch[2]) {
        if (await sessionBusy(daemon, key)) throw new HttpError(409, `a turn of session ${key} is running; /stop it or wait for it to finish, then delete it`);
        const deletion = await deleteSessionOps(store, key);
        if (!deletion) throw new HttpError(404, `no session ${key}`);
        await store.batch(deletion.ops, { sync: true });
        daemon.logger.info({ sessionKey: key, ...deletion.counts }, "session deleted");
        return json(res, 200, { deleted: key, ...deletion.counts });
      }
      if (req.method === "GET" && sessionMatch[2] === "/replies") return json(res, 200, { replies: await apiReplies(store, key) });
      if (req.method === "GET" && sessionMatch[2] === "/events") {
        const since = url.searchParams.get("since");
        if (since !== null && !/^\d{1,16}$/.test(since)) throw new HttpError(400, `since must be a time in milliseconds since the epoch, not ${JSON.stringify(since)}`);
        return streams.sessionEvents(req, res, key, since === null ? undefined : Number(since));
      }
      if (req.method === "POST" && sessionMatch[2] === "/messages") {
        const idempotencyKey = idempotencyKeyOf(req);
        const body = parseBody(apiMessageBody, await readJson(req));
        if (!body.media.length) return streams.postMessage(req, res, key, body.content, idempotencyKey);
        const taken = await takeAttachments(body.media, daemon.loaded.paths.mediaDir, daemon.transcriber).catch((err: unknown) => {
          throw err instanceof AttachmentError ? new HttpError(400, err.message) : err;
        });
        return streams.postMessage(req, res, key, [body.content, ...taken.lines].filter(Boolean).join("\n"), idempotencyKey, taken.media);
      }
    }
    throw new HttpError(404, `no route ${req.method} ${path}`);
  }

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    route(req, res).catch((err: unknown) => {
      const status = err instanceof HttpError || err instanceof StoreUnavailableError ? err.status : 500;
      if (status === 500) daemon.logger.error({ err }, "control API error");
      const body = { error: err instanceof Error ? err.message : String(err) };
      if (res.headersSent) res.end();
      else if (err instanceof StoreUnavailableError || (err instanceof HttpError && (status === 507 || status === 503))) refuseStore(res, status, body.error);
      else if (status === 413) refuseBody(req, res, status, body);
      else json(res, status, body);
    });
  };
  const server = createServer(handle);
  // A client that asks before sending its body (`Expect: 100-continue`, as curl does past 1 MiB) is told at once when it is too large.
  server.on("checkContinue", (req: IncomingMessage, res: ServerResponse) => {
    if (declaredWithinLimit(req)) res.writeContinue();
    handle(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) =>
      reject(
        err.code === "EADDRINUSE"
          ? new TroupeError(`port ${opts.port} on ${opts.host} is in use; stop what holds it, or choose a free port: gateway.port in the config (troupe gateway --port N for one run)`)
          : err,
      ),
    );
    server.listen(opts.port, opts.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  allowed = allowedHosts(opts.host, port);
  return {
    url: `http://${opts.host.includes(":") ? `[${opts.host}]` : opts.host}:${port}`,
    async close() {
      memory.stop();
      // A client whose stream ends mid-turn learns why: it may wait for the daemon and ask again.
      await streams.closeAll();
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
    },
  };
}

/** `?since=N`: the last N minutes of events (up to what the buffer keeps); absent, none. */
function sinceMs(raw: string | null, maxAgeMs: number): number {
  if (raw === null || raw === "") return 0;
  const minutes = Number(raw);
  if (!Number.isFinite(minutes) || minutes < 0) throw new HttpError(400, `since must be a number of minutes (0 to ${maxAgeMs / 60_000}), not ${JSON.stringify(raw)}`);
  return Math.min(minutes * 60_000, maxAgeMs);
}
