import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer, Server as HttpsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { createOpenAiProvider, ModelCallError, type ProviderOptions } from "../../src/providers/client.js";
import { requestJson } from "../../src/providers/request-body.js";
import { createHttpTransport, readText, sseEvents } from "../../src/providers/transport.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { useTempDirs } from "../helpers/tmp.js";
import { selfSignedCert } from "../helpers/tls.js";
import { until } from "../helpers/wait.js";

/** The model client over node:http(s) (src/providers/transport.ts, chat-http.ts, request-body.ts) against servers on 127.0.0.1. */

const provider = (url: string, stream: boolean, opts: Partial<ProviderOptions> = {}, extraHeaders: Record<string, string> = {}) =>
  createOpenAiProvider(
    { spec: { name: "custom", displayName: "c", defaultApiBase: null, keywords: [] }, apiKey: "k", apiBase: url, extraHeaders, model: "m" },
    { maxTokens: 100, temperature: 0, stream, backoff: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 5000 }, sleep: async () => {}, ...opts },
  );
const ask = (content = "hi", signal?: AbortSignal) => ({ messages: [{ role: "user" as const, content }], tools: [], signal });

const completion = (content: string) => JSON.stringify({ id: "c", object: "chat.completion", choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content } }], usage: { prompt_tokens: 1, completion_tokens: 1 } });
const chunk = (content: string) => `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
const sse = (...contents: string[]) => contents.map(chunk).join("") + "data: [DONE]\n\n";

interface RawServer {
  url: string;
  /** Every request body received, parsed. */
  bodies: Array<{ stream?: boolean; messages: Array<{ content: string }> }>;
  headers: IncomingMessage["headers"][];
  /** How many TCP connections were opened. */
  connections: () => number;
  /** Connections still open. */
  open: () => number;
  close(): Promise<void>;
}

/** A server whose handler writes the response itself (compression, framing, stalls, dropped sockets). */
async function rawServer(handle: (req: IncomingMessage, res: ServerResponse, index: number) => void, make: () => Server = () => createServer()): Promise<RawServer> {
  const server = make();
  const sockets = new Set<Socket>();
  let connections = 0;
  const bodies: RawServer["bodies"] = [];
  const headers: RawServer["headers"] = [];
  server.on("connection", (s: Socket) => {
    connections++;
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  server.on("secureConnection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    let text = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (text += c));
    req.on("end", () => {
      bodies.push(JSON.parse(text) as RawServer["bodies"][number]);
      headers.push(req.headers);
      handle(req, res, bodies.length - 1);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const scheme = server instanceof HttpsServer ? "https" : "http";
  return {
    url: `${scheme}://127.0.0.1:${port}/v1`,
    bodies,
    headers,
    connections: () => connections,
    open: () => sockets.size,
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

describe("the model client's HTTP transport", () => {
  let server: RawServer | undefined;
  let fake: FakeOpenAi | undefined;
  afterEach(async () => {
    await server?.close();
    await fake?.close();
    server = fake = undefined;
  });

  it("sends the key, extraHeaders (overriding ours, any case) and a UTF-8 body with its byte length, and asks for no compression", async () => {
    fake = await startFakeOpenAi([{ content: "ok" }]);
    const text = "héllo wörld, 你好 🎉".repeat(100);
    await provider(fake.url, false, {}, { "X-Custom": "1", "User-Agent": "mine/2" }).chat(ask(text));
    const [req] = fake.requests;
    expect(req?.body.messages[0]?.content).toBe(text);
    expect(req?.headers).toMatchObject({ authorization: "Bearer k", "content-type": "application/json", "x-custom": "1", "user-agent": "mine/2" });
    expect(Number(req?.headers["content-length"])).toBe(Buffer.byteLength(JSON.stringify({ model: "m", messages: [{ role: "user", content: text }], max_tokens: 100, temperature: 0, stream: false })));
    expect(req?.headers["accept-encoding"]).toBeUndefined();
  });

  it("sends OPENAI_ORG_ID and OPENAI_PROJECT_ID as the openai SDK did (extraHeaders still win)", async () => {
    fake = await startFakeOpenAi([{ content: "ok" }, { content: "ok" }]);
    const saved = { org: process.env.OPENAI_ORG_ID, project: process.env.OPENAI_PROJECT_ID };
    process.env.OPENAI_ORG_ID = "org-1";
    process.env.OPENAI_PROJECT_ID = "proj-1";
    try {
      await provider(fake.url, false).chat(ask());
      await provider(fake.url, false, {}, { "OpenAI-Project": "proj-mine" }).chat(ask());
    } finally {
      for (const [name, value] of [["OPENAI_ORG_ID", saved.org], ["OPENAI_PROJECT_ID", saved.project]] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
    expect(fake.requests.map((r) => [r.headers["openai-organization"], r.headers["openai-project"]])).toEqual([
      ["org-1", "proj-1"],
      ["org-1", "proj-mine"],
    ]);
  });

  it.each([
    ["gzip", gzipSync],
    ["x-gzip", gzipSync],
    ["deflate", deflateSync],
    ["br", brotliCompressSync],
  ] as const)("reads a reply the server compressed anyway (%s), streamed and not", async (encoding, compress) => {
    server = await rawServer((req, res, i) => {
      const streamed = server!.bodies[i]!.stream;
      res.writeHead(200, { "content-type": streamed ? "text/event-stream" : "application/json", "content-encoding": encoding });
      res.end(compress(streamed ? sse("com", "pressed") : completion("compressed")));
    });
    expect((await provider(server.url, false).chat(ask())).content).toBe("compressed");
    expect((await provider(server.url, true).chat(ask())).content).toBe("compressed");
  });

  it("reads large replies, with a content-length or chunked, streamed and not", async () => {
    const big = "x".repeat(3_000_000);
    server = await rawServer((_req, res, i) => {
      const streamed = server!.bodies[i]!.stream;
      const body = streamed ? sse(...(big.match(/[\s\S]{1,50000}/g) ?? [])) : completion(big);
      if (i % 2 === 0) res.writeHead(200, { "content-type": streamed ? "text/event-stream" : "application/json", "content-length": String(Buffer.byteLength(body)) });
      else res.writeHead(200, { "content-type": streamed ? "text/event-stream" : "application/json" });
      // In odd pieces, so events and UTF-8 are split across chunks.
      for (let at = 0; at < body.length; at += 65_537) res.write(body.slice(at, at + 65_537));
      res.end();
    });
    const opts = { maxReplyChars: 5_000_000 };
    for (const stream of [false, false, true, true]) expect((await provider(server.url, stream, opts).chat(ask())).content).toBe(big);
  });

  it("keeps the connection alive between calls, and re-sends on a new one when the kept one was dropped", async () => {
    server = await rawServer((req, res, i) => {
      // The third request's kept-alive socket is dropped unanswered, as a server does that closes idle connections.
      if (i === 2) return req.socket.destroy();
      res.writeHead(200, { "content-type": "application/json" }).end(completion(`reply ${i}`));
    });
    const p = provider(server.url, false);
    const retries: unknown[] = [];
    expect((await p.chat(ask())).content).toBe("reply 0");
    expect((await p.chat(ask())).content).toBe("reply 1");
    expect(server.connections()).toBe(1);
    expect((await p.chat({ ...ask(), onRetry: (r) => retries.push(r) })).content).toBe("reply 3");
    // Sent again at once on a fresh connection: not a failed attempt, no backoff.
    expect(retries).toEqual([]);
    expect(server.connections()).toBe(2);
  });

  it("stops a streamed reply at the caller's abort, mid-body, and closes its connection", async () => {
    server = await rawServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(chunk("first "));
    });
    const stop = new AbortController();
    const seen: string[] = [];
    const call = provider(server.url, true).chat({ ...ask(), signal: stop.signal, onDelta: (t) => seen.push(t) });
    await until(() => seen.length > 0, 10_000, "the first chunk");
    stop.abort(new Error("user stopped"));
    await expect(call).rejects.toThrow("user stopped");
    await until(() => server?.open() === 0, 10_000, "the connection to close");
  });

  it("abandons a body that stalls half-way (content-length, not streamed) at the idle time, and retries", async () => {
    const body = completion("whole");
    server = await rawServer((_req, res, i) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": String(body.length) });
      if (i === 0) res.write(body.slice(0, 20));
      else res.end(body);
    });
    const warnings: string[] = [];
    const logger = { warn: (o: { err: string }) => warnings.push(o.err) } as unknown as ProviderOptions["logger"];
    expect((await provider(server.url, false, { idleTimeoutMs: 400, logger }).chat(ask())).content).toBe("whole");
    expect(warnings).toEqual([`no data from ${server.url} for 0.4 s (model idle timeout); the call was abandoned`]);
    await until(() => server?.open() === 1, 10_000, "the stalled connection to close");
  });

  it("a refused connection names the endpoint, and its code reaches the error through the cause chain", async () => {
    server = await rawServer(() => {});
    const url = server.url;
    await server.close();
    server = undefined;
    const err = (await provider(url, true).chat(ask()).catch((e: unknown) => e)) as ModelCallError;
    expect(err).toBeInstanceOf(ModelCallError);
    expect(err.message).toBe(`model call to custom failed after 3 attempts: connection refused at ${url}`);
    expect(((err.cause as Error).cause as NodeJS.ErrnoException).code).toBe("ECONNREFUSED");
  });

  it("gives up on a connection not made within the connect timeout (ETIMEDOUT), as fetch did after 10 s", async () => {
    // A DNS lookup that never answers: the socket stays "connecting".
    const transport = createHttpTransport({ connectTimeoutMs: 200, lookup: () => {} });
    const started = Date.now();
    const err = (await transport.post(new URL("http://model.invalid/v1/chat/completions"), {}, "{}", new AbortController().signal, () => {}).catch((e: unknown) => e)) as NodeJS.ErrnoException;
    expect(err.code).toBe("ETIMEDOUT");
    expect(err.message).toBe("could not connect within 0.2 s");
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    transport.close();
  });

  it("an error status keeps its body, whatever its type; a 5xx is retried, a 4xx is not", async () => {
    server = await rawServer((_req, res, i) => {
      if (i === 0) res.writeHead(503, { "content-type": "text/html" }).end("<h1>down</h1>");
      else if (i === 1) res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "bad messages" } }));
    });
    const err = (await provider(server.url, true).chat(ask()).catch((e: unknown) => e)) as ModelCallError;
    expect(err.message).toBe(`model call to custom failed after 2 attempts: HTTP 400 from ${server.url}: the provider refused the request (bad messages)`);
    expect(server.bodies).toHaveLength(2);
  });

  it("a 301/302/303 redirect is not followed (fetch turned the POST into a body-less GET) but named, with where it points", async () => {
    server = await rawServer((_req, res) => res.writeHead(301, { location: "https://api.example.com/v1/chat/completions" }).end());
    const err = (await provider(server.url, false).chat(ask()).catch((e: unknown) => e)) as ModelCallError;
    expect(err.message).toBe(
      `model call to custom failed: HTTP 301 from ${server.url}: the endpoint redirects to https://api.example.com/v1/chat/completions (not followed): set providers.custom.apiBase to where it moved`,
    );
  });

  it("a 307/308 redirect is followed with the same POST and body, as fetch did; the key is not sent to another origin", async () => {
    const target: RawServer = await rawServer((_req, res, i) =>
      target.bodies[i]!.stream
        ? res.writeHead(200, { "content-type": "text/event-stream" }).end(sse("moved ", "here"))
        : res.writeHead(200, { "content-type": "application/json" }).end(completion("moved here")),
    );
    try {
      // A moved path on the same origin keeps the key; the hop to another origin (another port) drops it.
      server = await rawServer((req, res) => {
        if (req.url === "/v1/chat/completions") res.writeHead(307, { location: "/v2/chat/completions" }).end();
        else res.writeHead(308, { location: `${target.url}/chat/completions` }).end();
      });
      for (const stream of [false, true]) {
        const reply = await provider(`${server.url}`, stream).chat(ask("follow me"));
        expect(reply.content).toBe("moved here");
      }
      expect(server.bodies.map((b) => b.messages[0]!.content)).toEqual(["follow me", "follow me", "follow me", "follow me"]);
      expect(server.headers.map((h) => h.authorization)).toEqual(["Bearer k", "Bearer k", "Bearer k", "Bearer k"]);
      expect(target.bodies.map((b) => [b.messages[0]!.content, b.stream ?? false])).toEqual([
        ["follow me", false],
        ["follow me", true],
      ]);
      expect(target.headers.map((h) => h.authorization)).toEqual([undefined, undefined]);
    } finally {
      await target.close();
    }
  });

  it("redirects that go on and on stop after 5 hops, saying so", async () => {
    server = await rawServer((req, res) => res.writeHead(308, { location: `/hop${Number(/hop(\d+)/.exec(req.url ?? "")?.[1] ?? 0) + 1}` }).end());
    const err = (await provider(server.url, false).chat(ask()).catch((e: unknown) => e)) as ModelCallError;
    expect(server.bodies).toHaveLength(6);
    expect(err.message).toMatch(/HTTP 308 from .*: the endpoint redirects to .*\/hop6 \(not followed\)/);
  });

  it("an error event mid-stream fails the call with the provider's message", async () => {
    server = await rawServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(chunk("par") + `data: ${JSON.stringify({ error: { message: "overloaded mid-stream" } })}\n\n`);
    });
    await expect(provider(server.url, true).chat(ask())).rejects.toThrow(/overloaded mid-stream/);
  });

  describe("https", () => {
    const tmp = useTempDirs();
    it("speaks TLS to an https apiBase and checks its certificate: a self-signed one is refused at once (not retried), saying how to trust it", async () => {
      const { key, cert } = await selfSignedCert(await tmp());
      server = await rawServer((_req, res) => res.writeHead(200, { "content-type": "application/json" }).end(completion("secure")), () => createHttpsServer({ key, cert }));
      expect(server.url).toMatch(/^https:/);
      const err = (await provider(server.url, false).chat(ask()).catch((e: unknown) => e)) as ModelCallError;
      expect(err.message).toBe(
        `model call to custom failed: ${server.url} is up, but its TLS certificate is not trusted here (self-signed certificate): ` +
          "if you trust it, give its CA certificate (a PEM file) in NODE_EXTRA_CA_CERTS, or add it to the system store and set NODE_OPTIONS=--use-openssl-ca",
      );
      // One connection: one attempt (a retry would open another).
      expect(server.connections()).toBe(1);
      expect(server.bodies).toHaveLength(0);
    });
  });
});

describe("the request body", () => {
  it("is the body's JSON, the tool schemas serialised once per array", () => {
    const tools = [{ type: "function", function: { name: "read_file", description: "Reads \"a\" file", parameters: { type: "object", properties: { path: { type: "string" } } } } }];
    const body = { model: "m", messages: [{ role: "user", content: "hi ✓" }], tools, tool_choice: "auto", stream: true };
    expect(JSON.parse(requestJson(body))).toEqual(body);
    expect(JSON.parse(requestJson({ tools }))).toEqual({ tools });
    expect(JSON.parse(requestJson({ model: "m", tools: [] }))).toEqual({ model: "m", tools: [] });
    // The same array again gives its first serialisation (the registry replaces the array when its tools change).
    tools[0]!.function.name = "changed";
    expect(JSON.parse(requestJson(body)).tools[0].function.name).toBe("read_file");
    expect(JSON.parse(requestJson({ ...body, tools: [...tools] })).tools[0].function.name).toBe("changed");
  });

  it("is the body's JSON with long message texts (kept as JSON by their text), whatever they hold", () => {
    const prompt = `You are "troupe" ✓\n\t${"\\ back-slash, \u2028 line separator, \ud83d\ude00 emoji, <tags> & quotes \"x\" ".repeat(40)}`;
    const result = "x".repeat(5_000);
    const messages = [
      { role: "system", content: prompt },
      { role: "user", content: "hi" },
      { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "read_file", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "c1", name: "read_file", content: result },
      { role: "user", content: [{ type: "text", text: "a part" }] },
    ];
    const body = { model: "m", messages, temperature: 0 };
    expect(JSON.parse(requestJson(body))).toEqual(body);
    // Asked again (the cached texts): the same bytes.
    expect(requestJson(body)).toBe(JSON.stringify(JSON.parse(requestJson(body))));
    // A new text (another turn's prompt) is its own.
    const next = { ...body, messages: [{ role: "system", content: `${prompt} and more` }, ...messages.slice(1)] };
    expect(JSON.parse(requestJson(next))).toEqual(next);
    expect(JSON.parse(requestJson({ messages: [{ content: result }] }))).toEqual({ messages: [{ content: result }] });
  });
});

describe("server-sent events", () => {
  async function* pieces(...parts: string[]) {
    for (const p of parts) yield p;
  }
  const events = async (...parts: string[]) => {
    const out: Array<{ event: string | null; data: string }> = [];
    for await (const e of sseEvents(pieces(...parts), () => {})) out.push(e);
    return out;
  };

  it("splits events at blank lines whatever the line ends and wherever the chunks break", async () => {
    const want = [
      { event: null, data: "one" },
      { event: "error", data: "two\nlines" },
      { event: null, data: "three" },
    ];
    const text = "data: one\r\n\r\n: a comment\nevent: error\r\ndata: two\r\ndata:lines\n\ndata: three\r\rdata: ";
    expect(await events(text)).toEqual([...want, { event: null, data: "" }]);
    // Every split of the text into two chunks gives the same events (a CRLF split between its \r and \n included).
    for (let at = 1; at < text.length; at++) expect(await events(text.slice(0, at), text.slice(at))).toEqual([...want, { event: null, data: "" }]);
  });

  it("gives a last event that the stream ended without a blank line", async () => {
    expect(await events("data: [DONE]")).toEqual([{ event: null, data: "[DONE]" }]);
  });
});

describe("reading a reply's body", () => {
  it("a body ended, cut or already destroyed settles (a stream destroyed before it is read fails as a premature close, never hangs)", async () => {
    const { PassThrough } = await import("node:stream");
    const stream = () => {
      const s = new PassThrough();
      s.setEncoding("utf8");
      return s;
    };
    const whole = stream();
    whole.end("all of it");
    expect(await readText(whole, () => {})).toBe("all of it");
    const cut = stream();
    const reading = readText(cut, () => {});
    cut.write("part");
    cut.destroy();
    await expect(reading).rejects.toMatchObject({ code: "ERR_STREAM_PREMATURE_CLOSE" });
    const gone = stream();
    gone.write("partial");
    gone.destroy();
    await new Promise((r) => setTimeout(r, 20));
    const late = readText(gone, () => {});
    const outcome = await Promise.race([late.then(() => "resolved", (e: { code?: string }) => e.code), new Promise((r) => setTimeout(() => r("still waiting after 2 s"), 2_000))]);
    expect(outcome).toBe("ERR_STREAM_PREMATURE_CLOSE");
  });
});
