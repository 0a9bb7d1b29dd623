import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AnyActorRef } from "xstate";
import { DREAM_ACTOR_ID } from "../../machines/supervisor.machine.js";
import { memoryOverview } from "../memory/overview.js";
import type { AddressInfo } from "node:net";
import { filter, merge } from "rxjs";
import { apiReplies } from "../channels/api.js";
import { AttachmentError, takeAttachments } from "../channels/api-media.js";
import { TroupeError } from "../errors.js";
import type { Daemon } from "../runtime.js";
import { sessionActorId } from "../../machines/supervisor.machine.js";
import { sessionDetail, sessionsOverview } from "../store/session-view.js";
import { deleteSessionOps } from "../store/sessions.js";
import { listOpenTurns } from "../store/turns.js";
import { failureLine, StoreUnavailableError } from "../store/health.js";
import { VERSION } from "../version.js";
import { machines } from "../../machines/index.js";
import { machineGraphs } from "../inspect/graph.js";
import { createRedactor, secretsOf } from "../log/redact.js";
import type { ActorNode } from "./actor-tree.js";
import { INSPECTION_EVENT_TYPES } from "./event-log.js";
import { inspectorAsset } from "./inspector/assets.js";
import { turnDetail } from "./turn-view.js";
import { allowedHosts, hostAllowed } from "./host-check.js";
import { cronRoute, CronRouteError } from "./cron-routes.js";
import { openSse } from "./sse.js";
import { tokenMatches } from "./token.js";
import { watchProcessMemory } from "./process-memory.js";
import { tokenCounts } from "../memory/tokens.js";
import { apiMessageBody, declaredWithinLimit, HttpError, idempotencyKeyOf, json, parseBody, readJson, refuseBody, refuseStore, sessionKeyOf, type ControlServer } from "./request-io.js";

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
  };
  const graphs = machineGraphs(machines);
  const redactText = createRedactor(secretsOf(daemon.loaded.config));
  const memory = watchProcessMemory();

  /** The refusal of a message while the store is failing: 507 (disk full) or 503, the cause without a path, and when to retry. */
  function refusal(err: StoreUnavailableError): HttpError {
    return new HttpError(err.status, err.message);
  }

  /** Open event streams: told `shutting_down` and ended before the server closes. */
  const streams = new Set<{ send(event: string, data: unknown): void; end(): Promise<void> }>();
  function track(req: IncomingMessage, res: ServerResponse) {
    const sse = openSse(res);
    const entry = { send: sse.send, end: () => new Promise<void>((resolve) => res.end(resolve)) };
    streams.add(entry);
    res.on("close", () => streams.delete(entry));
    return {
      ...sse,
      done: () => {
        streams.delete(entry);
        res.end();
      },
    };
  }

  /**
   * A message in, answered on its event stream. With an idempotency key the message id is derived
   * from it: a retried POST (the client lost the stream when the daemon stopped) is not taken twice,
   * and is answered with the reply the first one got, from the chat's mailbox if it was delivered already.
   */
  function postMessage(req: IncomingMessage, res: ServerResponse, key: string, content: string, idempotencyKey: string | undefined, media: string[] = []) {
    const down = daemon.storage().store;
    if (down.state === "failing") throw refusal(new StoreUnavailableError(down.failure ?? "io-error"));
    // Events are held until the message is accepted: a message the store refuses is answered with a
    // status code (below), not with a 200 and an error event.
    let sse: ReturnType<typeof track> | undefined;
    const held: Array<[string, unknown]> = [];
    const send = (event: string, data: unknown) => (sse ? sse.send(event, data) : void held.push([event, data]));
    let id: string | undefined;
    let answered = false;
    const early: Array<{ content: string; answers: string[]; deliveryId: string; alreadySent?: boolean }> = [];
    const reply = (e: { content: string; answers: string[]; deliveryId: string; alreadySent?: boolean }) => {
      if (answered) return;
      answered = true;
      send("reply", { content: e.content, answers: e.answers, deliveryId: e.deliveryId, ...(e.alreadySent ? { alreadySent: true } : {}) });
      stop();
      sse?.done();
    };
    const sub = merge(
      bus.ofType("progress", "tool_hint", "turn_state", "model_retry", "model_fallback").pipe(filter((e) => e.sessionKey === key)),
      bus.ofType("outbound").pipe(filter((e) => e.channel === "api")),
    ).subscribe((e) => {
      if (e.type !== "outbound") return send(e.type, e);
      if (!id) early.push(e);
      if (id && e.answers.includes(id)) reply(e);
      else if (e.chatId === key && e.answers.length === 0) send("message", { content: e.content, media: e.media, deliveryId: e.deliveryId, at: e.at });
    });
    let poll: NodeJS.Timeout | undefined;
    const stop = () => {
      sub.unsubscribe();
      clearInterval(poll);
    };
    req.on("close", stop);
    res.on("close", stop);
    const fromMailbox = async () => {
      const found = (await apiReplies(store, key)).find((r) => r.answers.includes(id!));
      if (found) reply(found);
    };
    // An API chat is its session: replies come back on the chat named by the session key.
    daemon.accept("api", { chatId: key, senderId: "api", content, sessionKey: key, messageId: idempotencyKey, ...(media.length ? { media } : {}) }).then(
      async (accepted) => {
        id = accepted;
        // The client went away while the message was taken in: it is answered into the mailbox.
        if (res.destroyed) return stop();
        sse = track(req, res);
        sse.send("accepted", { id, sessionKey: key });
        for (const [event, data] of held.splice(0)) sse.send(event, data);
        const before = early.find((e) => e.answers.includes(accepted));
        if (before) return reply(before);
        if (!idempotencyKey) return;
        // A retry: its reply may be in the mailbox already, or reach it from the outbox a start left pending.
        await fromMailbox();
        if (!answered) poll = setInterval(() => void fromMailbox().catch(() => undefined), 1_000);
      },
      (err: Error) => {
        stop();
        if (err instanceof StoreUnavailableError) return refuseStore(res, err.status, err.message);
        daemon.logger.error({ err }, "could not take a message in");
        json(res, err instanceof TroupeError ? 503 : 500, { error: err.message });
      },
    );
  }

  /**
   * What reaches a session's API chat outside any POST: message-tool sends, replies to subagent
   * reports, and every reply (each names the ids it answers). `?since=<ms>` first sends what the
   * mailbox got after that time, so a client that reconnects misses nothing.
   */
  async function sessionEvents(req: IncomingMessage, res: ServerResponse, key: string, since: number | undefined) {
    const sse = track(req, res);
    const seen = new Set<string>();
    const send = (e: { content: string; media: string[]; answers: string[]; deliveryId: string; at: number }) => {
      if (seen.has(e.deliveryId)) return;
      seen.add(e.deliveryId);
      sse.send("message", { content: e.content, media: e.media, answers: e.answers, deliveryId: e.deliveryId, at: e.at });
    };
    const live: Parameters<typeof send>[0][] = [];
    let caughtUp = false;
    const sub = bus
      .ofType("outbound")
      .pipe(filter((e) => e.channel === "api" && e.chatId === key))
      .subscribe((e) => (caughtUp ? send(e) : live.push(e)));
    const keepAlive = setInterval(() => sse.comment("keep-alive"), 15_000);
    const stop = () => {
      sub.unsubscribe();
      clearInterval(keepAlive);
    };
    req.on("close", stop);
    res.on("close", stop);
    if (since !== undefined) for (const r of await apiReplies(store, key)) if (r.at > since) send(r);
    caughtUp = true;
    live.forEach(send);
    sse.send("ready", { sessionKey: key });
  }

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
      const turnId = decodeURIComponent(turnMatch[1]!);
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
        return sessionEvents(req, res, key, since === null ? undefined : Number(since));
      }
      if (req.method === "POST" && sessionMatch[2] === "/messages") {
        const idempotencyKey = idempotencyKeyOf(req);
        const body = parseBody(apiMessageBody, await readJson(req));
        if (!body.media.length) return postMessage(req, res, key, body.content, idempotencyKey);
        const taken = await takeAttachments(body.media, daemon.loaded.paths.mediaDir, daemon.transcriber).catch((err: unknown) => {
          throw err instanceof AttachmentError ? new HttpError(400, err.message) : err;
        });
        return postMessage(req, res, key, [body.content, ...taken.lines].filter(Boolean).join("\n"), idempotencyKey, taken.media);
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
          ? new TroupeError(`port ${opts.port} on ${opts.host} is in use; stop what holds it or set gateway.port in the config`)
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
      const ended = [...streams].map((stream) => {
        stream.send("shutting_down", { reason: "the daemon is stopping; a turn under way resumes when it starts again" });
        return stream.end();
      });
      await Promise.race([Promise.all(ended), new Promise((r) => setTimeout(r, 1_000).unref())]);
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
    },
  };
}

/**
 * Whether work of a session is under way: its actor is doing anything but waiting for a message
 * (loading, a turn waiting for a slot or running), a turn of it is open (running, or about to
 * resume), or a subagent it spawned runs.
 */
async function sessionBusy(daemon: Daemon, key: string): Promise<boolean> {
  const ref = daemon.sessions.get(sessionActorId(key));
  const snapshot = ref?.getSnapshot() as { status: string; value: unknown } | undefined;
  if (snapshot?.status === "active" && snapshot.value !== "idle") return true;
  // A corrupt open-turn record names no turn that could be running; deleting the session removes it.
  if ((await listOpenTurns(daemon.store, key, { onCorrupt: () => {} })).length > 0) return true;
  return daemon.subagents.active().some((a) => a.record.origin.sessionKey === key);
}

/** Subagents are turn actors of the pool; the tree shows them under the session that spawned them. */
function subagentsUnder(daemon: Daemon) {
  return (root: ActorNode) => {
    const shown = new Set<string>();
    const walk = (n: ActorNode): void => void (shown.add(n.id), n.children.forEach(walk));
    walk(root);
    for (const { record, phase, since } of daemon.subagents.active()) {
      // Running ones are in the tree already (their turn actor); queued ones are not actors yet.
      if (shown.has(`subagent:${record.id}`)) continue;
      const parent = root.children.find((c) => c.id === sessionActorId(record.origin.sessionKey)) ?? root;
      parent.children.push({ id: `subagent:${record.id}`, kind: "subagent", machine: "turn", state: phase, since, children: [] });
    }
  };
}

/** Children the supervisor gave up on, with their last error. */
/**
 * What the daemon keeps in memory that grows with traffic up to a bound (GET /api/status; the soak
 * bench prints it each minute): live session actors, the unarchived messages their histories hold
 * (up to each session's budget), the token counts cached (up to a fixed number); beside them, how
 * many chunks consolidation archived since the start (it keeps those histories at their budget).
 */
function heldNow(daemon: Daemon) {
  const consolidator = daemon.conversation.consolidator;
  return { liveSessions: daemon.sessions.size(), keptSessions: consolidator.held(), keptMessages: consolidator.keptMessages(), archivedChunks: consolidator.archivedChunks(), tokenCounts: tokenCounts() };
}

function failedChildren(daemon: Daemon) {
  return Object.values(daemon.supervisor.getSnapshot().context.children)
    .filter((c) => c.status !== "running")
    .map((c) => ({ id: c.id, kind: c.kind, status: c.status, error: c.lastError, since: c.since }));
}

/** `?since=N`: the last N minutes of events (up to what the buffer keeps); absent, none. */
function sinceMs(raw: string | null, maxAgeMs: number): number {
  if (raw === null || raw === "") return 0;
  const minutes = Number(raw);
  if (!Number.isFinite(minutes) || minutes < 0) throw new HttpError(400, `since must be a number of minutes (0 to ${maxAgeMs / 60_000}), not ${JSON.stringify(raw)}`);
  return Math.min(minutes * 60_000, maxAgeMs);
}

/** The supervisor's view: restart counts on its children, and those restarting or failed (no live actor) listed with their error. */
function supervision(daemon: Daemon, root: ActorNode) {
  for (const record of Object.values(daemon.supervisor.getSnapshot().context.children)) {
    const node = root.children.find((c) => c.id === record.id);
    const restarts = record.failures.length;
    if (node) {
      if (restarts) node.restarts = restarts;
      continue;
    }
    if (record.status === "running") continue;
    root.children.push({ id: record.id, kind: record.kind, machine: null, state: record.status, since: record.since, error: record.lastError ?? undefined, restarts, children: [] });
  }
}

const SECURITY_HEADERS = {
  "cache-control": "no-cache",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  // Everything from troupe itself; no CDN, no external font.
  "content-security-policy": "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
};

/** The inspector page and its assets: no token needed to load them (they hold no data); the page asks for it. */
async function serveInspector(res: ServerResponse, path: string): Promise<void> {
  if (path === "/inspector") return void res.writeHead(308, { location: "/inspector/" }).end();
  const name = path.slice("/inspector/".length) || "index.html";
  const asset = await inspectorAsset(name);
  if (!asset) throw new HttpError(404, `no inspector asset ${name}`);
  res.writeHead(200, { "content-type": asset.type, "content-length": Buffer.byteLength(asset.body), ...SECURITY_HEADERS }).end(asset.body);
}
