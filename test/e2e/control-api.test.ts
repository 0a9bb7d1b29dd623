import { request, type IncomingHttpHeaders } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSse } from "../../src/server/sse.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { writeHome } from "../helpers/daemon.js";
import { getJson, startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * One request over node:http, which (unlike fetch) lets a test set Host and send a body its own way:
 * `send` writes the body and may keep the request open; the promise resolves with the response.
 */
function raw(g: GatewayProcess, opts: { method?: string; path: string; headers?: Record<string, string | number>; send?: (req: ReturnType<typeof request>) => void }): Promise<RawResponse> {
  const url = new URL(g.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method: opts.method ?? "GET", path: opts.path, headers: opts.headers, agent: false }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on("error", reject);
    });
    // The server may answer and close while the body is still going out; the answer is what counts.
    req.on("error", reject);
    if (opts.send) opts.send(req);
    else req.end();
  });
}

const MiB = 1024 * 1024;

/** The promise's value, or a failure naming `what` after `ms`. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms: ${what}`)), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

describe("control API hardening (one real gateway over loopback)", () => {
  let fake: FakeOpenAi;
  let g: GatewayProcess;
  let home: string;
  // One gateway for all: each test uses its own session keys and counts only its own model requests.
  beforeAll(async () => {
    // The model echoes each message's text (its last line, after the runtime context), so a reply shows what it answers.
    fake = await startFakeOpenAi([], (req) => {
      const last = req.body.messages.findLast((m) => m.role === "user");
      return { content: `re: ${String(last?.content).split("\n").at(-1)}` };
    });
    home = await mkdtemp(join(tmpdir(), "troupe-test-"));
    await writeHome(home, fake.url, { config: { gateway: { port: 0 } } });
    g = await startGateway(home);
  }, 60_000);
  afterAll(async () => {
    g?.proc.kill("SIGKILL");
    await g?.exited;
    await fake?.close();
    await rm(home, { recursive: true, force: true });
  });

  const port = (g: GatewayProcess) => new URL(g.url).port;

  /** A refused message made no session and reached no model. */
  async function nothingReached(key: string) {
    expect((await fetch(`${g.url}/api/sessions/${encodeURIComponent(key)}`, { headers: g.auth })).status).toBe(404);
    expect(fake.requests.filter((r) => JSON.stringify(r.body).includes(key))).toEqual([]);
  }

  it("answers only requests addressed to its own host and port (DNS rebinding)", async () => {
    const health = (host: string) => raw(g, { path: "/health", headers: { host } });
    for (const host of ["evil.example", `evil.example:${port(g)}`, "127.0.0.1", `127.0.0.1:1`, `localhost.evil.example:${port(g)}`]) {
      const res = await health(host);
      expect(res.status, host).toBe(421);
      expect(JSON.parse(res.body).error, host).toMatch(/Host/);
    }
    const refused = await raw(g, { path: "/api/actors", headers: { ...g.auth, host: "evil.example" } });
    expect(refused.status).toBe(421);
    expect(refused.body).not.toContain("supervisor");

    for (const host of [`127.0.0.1:${port(g)}`, `localhost:${port(g)}`, `LOCALHOST:${port(g)}`, `[::1]:${port(g)}`]) {
      expect((await health(host)).status, host).toBe(200);
    }
    expect((await raw(g, { path: "/api/actors", headers: { ...g.auth, host: `127.0.0.1:${port(g)}` } })).status).toBe(200);
  });

  it("GET /api/status gives the process's memory: RSS and V8's heap (with the token only)", async () => {
    expect((await fetch(`${g.url}/api/status`)).status).toBe(401);
    const status = await getJson<{ pid: number; uptimeMs: number; memory: Record<string, number> }>(g, "/api/status");
    expect(status.pid).toBe(g.proc.pid);
    const m = status.memory;
    for (const field of ["rss", "heapUsed", "heapTotal", "heapLimit", "external"]) expect(m[field], field).toBeGreaterThan(0);
    expect(m.heapUsed).toBeLessThanOrEqual(m.heapTotal!);
    expect(m.heapTotal).toBeLessThanOrEqual(m.heapLimit!);
    expect(m.fullGcs).toBeGreaterThanOrEqual(0);
    if (m.heapUsedAfterGc !== undefined) expect(m.heapUsedAfterGc).toBeLessThanOrEqual(m.heapLimit!);
  });

  it("GET /api/status says what the daemon keeps that grows with traffic up to a bound (the soak bench prints it)", async () => {
    const { held } = await getJson<{ held: { liveSessions: number; keptSessions: number; keptMessages: number; archivedChunks: number; tokenCounts: { cached: number; limit: number; tokenizerLoaded: boolean } } }>(g, "/api/status");
    expect(held.liveSessions).toBeGreaterThanOrEqual(0);
    expect(held.keptSessions).toBeLessThanOrEqual(held.liveSessions);
    expect(held.keptMessages).toBeGreaterThanOrEqual(0);
    expect(Number.isInteger(held.archivedChunks) && held.archivedChunks >= 0).toBe(true);
    expect(held.tokenCounts.limit).toBe(20_000);
    expect(held.tokenCounts.cached).toBeLessThanOrEqual(held.tokenCounts.limit);
    expect(typeof held.tokenCounts.tokenizerLoaded).toBe("boolean");
  });

  it("sends no CORS headers, not even to a preflight", async () => {
    const origin = "http://evil.example";
    const preflight = await raw(g, {
      method: "OPTIONS",
      path: "/api/sessions/api:x/messages",
      headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type" },
    });
    expect(preflight.status).toBeGreaterThanOrEqual(400);
    const actors = await raw(g, { path: "/api/actors", headers: { ...g.auth, origin } });
    expect(actors.status).toBe(200);
    const health = await raw(g, { path: "/health", headers: { origin } });
    for (const res of [preflight, actors, health]) expect(Object.keys(res.headers).filter((h) => h.startsWith("access-control-"))).toEqual([]);
  });

  it("a malformed percent-encoding in a path is a 400, not a 500", async () => {
    // Every route that takes an id from the path: sessions, cron jobs and their runs, turns.
    for (const path of ["/api/sessions/%E0%A4%A", "/api/sessions/%E0%A4%A/replies", "/api/sessions/api:%ZZ", "/api/cron/jobs/%ZZ/runs", "/api/turns/%ZZ"]) {
      const res = await raw(g, { path, headers: g.auth });
      expect(res.status, path).toBe(400);
      expect(JSON.parse(res.body).error, path).toMatch(/^malformed percent-encoding in the path: \S*%/);
    }
    for (const [method, path] of [["DELETE", "/api/cron/jobs/%ZZ"], ["POST", "/api/cron/jobs/%E0%A4%A/run"], ["POST", "/api/cron/jobs/%ZZ/enable"]] as const) {
      const res = await raw(g, { method, path, headers: g.auth });
      expect(res.status, path).toBe(400);
      expect(JSON.parse(res.body).error, path).toMatch(/^malformed percent-encoding in the path: \S*%/);
    }
    const post = await raw(g, { method: "POST", path: "/api/sessions/%E0%A4%A/messages", headers: { ...g.auth, "content-type": "application/json" }, send: (r) => r.end('{"content":"hi"}') });
    expect(post.status).toBe(400);
  });

  it("refuses a body over 1 MiB by its Content-Length before reading it, and keeps answering meanwhile", async () => {
    const headers = { ...g.auth, "content-type": "application/json" };
    const declared = Math.floor(1.5 * MiB);

    // Declares 1.5 MB, sends 64 KiB and waits: the refusal must come without the rest.
    let sent = 0;
    let held: ReturnType<typeof request> | undefined;
    const early = raw(g, {
      method: "POST",
      path: "/api/sessions/api:big/messages",
      headers: { ...headers, "content-length": declared },
      send: (req) => {
        held = req;
        req.write(Buffer.alloc(64 * 1024, "a"));
        sent += 64 * 1024;
      },
    });
    const t0 = Date.now();
    const healthWhileHeld = await fetch(`${g.url}/health`);
    const healthMs = Date.now() - t0;
    expect(healthWhileHeld.status).toBe(200);
    const refused = await within(early, 10_000, "the 413 before the body was sent").finally(() => held?.destroy());
    expect(refused.status).toBe(413);
    expect(JSON.parse(refused.body).error).toMatch(/1 MiB/);
    expect(sent).toBeLessThan(declared);

    // A client that asks first (`Expect: 100-continue`) is refused without sending any of it.
    let continued = false;
    const asked = raw(g, {
      method: "POST",
      path: "/api/sessions/api:big/messages",
      headers: { ...headers, "content-length": declared, expect: "100-continue" },
      send: (req) => {
        held = req;
        req.on("continue", () => (continued = true));
        req.flushHeaders();
      },
    });
    const refusedFirst = await within(asked, 10_000, "the 413 to Expect: 100-continue").finally(() => held?.destroy());
    expect(refusedFirst.status).toBe(413);
    expect(continued).toBe(false);

    // Whole 1.5 MB JSON bodies from fetch, on its pooled connections: each a 413, never a reset, and /health answers meanwhile.
    const big = JSON.stringify({ content: "a".repeat(declared) });
    const took = [healthMs];
    for (let i = 0; i < 3; i++) {
      const t1 = Date.now();
      const posting = fetch(`${g.url}/api/sessions/api:big/messages`, { method: "POST", headers, body: big });
      const health = await fetch(`${g.url}/health`);
      took.push(Date.now() - t1);
      expect(health.status).toBe(200);
      const res = await posting;
      took.push(Date.now() - t1);
      expect(res.status).toBe(413);
      expect(((await res.json()) as { error: string }).error).toMatch(/1 MiB/);
    }
    // Generous bounds: on a loaded box a refused body and a health check take milliseconds, not seconds.
    expect(Math.max(...took)).toBeLessThan(3_000);
    await nothingReached("api:big");
  });

  it("stops taking a chunked body once it passes 1 MiB and answers 413", async () => {
    const chunk = Buffer.alloc(64 * 1024, "a");
    const res = await raw(g, {
      method: "POST",
      path: "/api/sessions/api:big/messages",
      headers: { ...g.auth, "content-type": "application/json", "transfer-encoding": "chunked" },
      send: (req) => {
        // 1.5 MB in 64 KiB chunks, then the end of the body.
        let left = 24;
        const next = () => {
          while (left > 0) {
            left--;
            if (!req.write(chunk)) return void req.once("drain", next);
          }
          req.end();
        };
        next();
      },
    });
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body).error).toMatch(/1 MiB/);
    expect((await fetch(`${g.url}/health`)).status).toBe(200);
    await nothingReached("api:big");
  });

  it("refuses a session key with a control character: another session's transcript, replies and model requests stay untouched", async () => {
    const post = async (key: string, content: string) => {
      const res = await fetch(`${g.url}/api/sessions/${encodeURIComponent(key)}/messages`, { method: "POST", headers: { ...g.auth, "content-type": "application/json" }, body: JSON.stringify({ content }) });
      if (!res.ok) return { status: res.status, error: ((await res.json()) as { error: string }).error };
      for await (const m of readSse(res.body!)) if (m.event === "reply") return { status: res.status, reply: (m.data as { content: string }).content };
      return { status: res.status };
    };
    const before = fake.requests.length;
    expect(await post("api:victim", "first")).toEqual({ status: 200, reply: "re: first" });

    // The crafted key starts with the victim's store prefix: `msg:api:victim\0` + epoch `000000:`.
    const crafted = "api:victim\u0000000000:evil";
    const attack = await post(crafted, "INJECTED");
    expect(attack.status).toBe(400);
    expect(attack.error).toMatch(/session key.*control character|control character.*session key/i);
    for (const key of ["api:\u001b[31mred", "api:x\ny", `api:${"x".repeat(300)}`]) {
      expect((await post(key, "no")).status, JSON.stringify(key)).toBe(400);
    }
    expect((await fetch(`${g.url}/api/sessions/${encodeURIComponent(crafted)}`, { headers: g.auth })).status).toBe(400);
    expect((await fetch(`${g.url}/api/sessions/${encodeURIComponent(crafted)}/replies`, { headers: g.auth })).status).toBe(400);

    expect(await post("api:victim", "second")).toEqual({ status: 200, reply: "re: second" });
    const transcript = await getJson<{ messages: Array<{ role: string; content: string }> }>(g, "/api/sessions/api:victim");
    expect(transcript.messages.map((m) => `${m.role}:${m.content}`)).toEqual(["user:first", "assistant:re: first", "user:second", "assistant:re: second"]);
    const replies = await getJson<{ replies: Array<{ content: string }> }>(g, "/api/sessions/api:victim/replies");
    expect(replies.replies.map((r) => r.content)).toEqual(["re: first", "re: second"]);
    expect(fake.requests.length - before).toBe(2);
    expect(fake.requests.filter((r) => JSON.stringify(r.body).includes("INJECTED"))).toEqual([]);
    const sessions = await getJson<{ sessions: Array<{ key: string }> }>(g, "/api/sessions");
    expect(sessions.sessions.map((s) => s.key).filter((k) => k.startsWith("api:victim") || k.startsWith("api:x") || k.startsWith("api:\u001b"))).toEqual(["api:victim"]);
  });
});
