import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { forgetEncoded, requestBody } from "../../src/providers/request-body.js";
import { createOpenAiProvider } from "../../src/providers/client.js";
import type { ToolSchema } from "../../src/providers/client.js";
import type { ChatMessage } from "../../src/providers/messages.js";

/**
 * The bytes a model call puts on the wire, pinned for a session whose history grows call after
 * call (the same message objects sent again, new ones appended): whatever the encoder caches, the
 * body is byte for byte the JSON of the request as built (`reference` below: the body's keys in
 * order, the tool schemas last), with its byte length as the content-length.
 */

/** The body's JSON as troupe has always sent it: its keys in order, `tools` moved last. */
function reference(body: Record<string, unknown>): string {
  const { tools, ...rest } = body;
  if (!Array.isArray(tools) || !tools.length) return JSON.stringify(body);
  const head = JSON.stringify(rest);
  return head === "{}" ? `{"tools":${JSON.stringify(tools)}}` : `${head.slice(0, -1)},"tools":${JSON.stringify(tools)}}`;
}

interface Captured {
  raw: Buffer;
  contentLength: number;
}

async function captureServer(stream: boolean): Promise<{ url: string; bodies: Captured[]; server: Server }> {
  const bodies: Captured[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      bodies.push({ raw: Buffer.concat(chunks), contentLength: Number(req.headers["content-length"]) });
      if (stream) {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.end(`data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: "ok" }, finish_reason: "stop" }] })}\n\ndata: [DONE]\n\n`);
      } else {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ id: "c", object: "chat.completion", choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: "ok" } }] }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, bodies, server };
}

const tools: ToolSchema[] = [
  { type: "function", function: { name: "list_dir", description: "Lists a \"directory\" ✓", parameters: { type: "object", properties: { path: { type: "string" } } } } },
  { type: "function", function: { name: "read_file", description: "Reads a file", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } } },
];

/** Messages of every shape, with text that JSON escapes (quotes, control characters, lone surrogates, emoji). */
function turnMessages(i: number): ChatMessage[] {
  return [
    { role: "user", content: i % 3 === 0 ? [{ type: "text", text: `turn ${i} "quoted"\n\ttab ✓` }, { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }] : `turn ${i}: list \u0001 the workspace 🎉 \ud800` },
    { role: "assistant", content: null, tool_calls: [{ id: `call_${i}`, type: "function", function: { name: "list_dir", arguments: `{"path":"."}` } }], ...(i % 2 ? { reasoning_content: "thinking…" } : {}) },
    { role: "tool", tool_call_id: `call_${i}`, name: "list_dir", content: `a.txt\nb.txt\n${"x".repeat(i * 10)}` },
    { role: "assistant", content: `done ${i} — 你好` },
  ];
}

describe("the request body of a session's model calls", () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  for (const stream of [false, true]) {
    it(`is byte for byte the request's JSON on every call as the session grows (${stream ? "streamed" : "not streamed"})`, async () => {
      const cap = await captureServer(stream);
      server = cap.server;
      const provider = createOpenAiProvider(
        { spec: { name: "custom", displayName: "c", defaultApiBase: null, keywords: [] }, apiKey: "k", apiBase: cap.url, extraHeaders: {}, model: "m" },
        { maxTokens: 100, temperature: 0.1, stream, backoff: { maxRetries: 0, baseDelayMs: 1, maxDelayMs: 1 }, sleep: async () => {} },
      );
      const system: ChatMessage = { role: "system", content: "You are troupe.\nBe brief." };
      const history: ChatMessage[] = [system];
      const sent: Array<Record<string, unknown>> = [];
      let cut = 1;
      for (let i = 0; i < 60; i++) {
        history.push(...turnMessages(i));
        // The history's start moves on as the Consolidator archives it.
        if (i % 9 === 8) cut += 13 + (i % 5);
        // The system prompt: a new message object around the same text (as every turn makes it), a changed text, its keys in another order, one key more.
        const prompt =
          i % 3 === 0 ? { role: "system", content: i < 30 ? system.content : `You are troupe ${i % 2}.\n"Be" brief ✓` }
          : i % 5 === 0 ? { content: system.content, role: "system" }
          : i % 11 === 0 ? { role: "system", content: system.content, name: "extra" }
          : system;
        const kept = [prompt as ChatMessage, ...history.slice(cut)];
        // The session's own objects again and again, and copies (as microcompact and repair make) now and then: all of them, or one in the middle.
        const messages =
          i === 4 ? kept.map((m) => (m.role === "tool" ? { ...m, content: "[cleared]" } : m))
          : i % 4 === 1 ? kept.map((m, k) => (k === Math.floor(kept.length / 2) ? { ...m } : m))
          : kept;
        const withTools = i % 7 !== 2; // the Consolidator's summary call goes without tools
        await provider.chat({ messages, tools: withTools ? tools : [] });
        sent.push({
          model: "m",
          messages,
          max_tokens: 100,
          temperature: 0.1,
          ...(withTools ? { tools, tool_choice: "auto" } : {}),
          stream,
          ...(stream ? { stream_options: { include_usage: true } } : {}),
        });
      }
      expect(cap.bodies).toHaveLength(sent.length);
      cap.bodies.forEach((b, i) => {
        const want = Buffer.from(reference(sent[i]!), "utf8");
        expect(b.raw.toString("utf8")).toBe(want.toString("utf8"));
        expect(b.raw.equals(want)).toBe(true);
        expect(b.contentLength).toBe(want.length);
      });
    });
  }

  it("keeps a message's bytes once: those a run of the history holds are not kept per message too", () => {
    const history = Array.from({ length: 100 }, (_, i) => turnMessages(i)).flat();
    const body = (messages: ChatMessage[]) => Buffer.concat(requestBody({ model: "m", messages })).toString("utf8");
    // Sent twice as it grows, then from a cut start (its first run is made anew, its messages encoded again).
    expect(body(history.slice(0, 300))).toBe(JSON.stringify({ model: "m", messages: history.slice(0, 300) }));
    expect(body(history)).toBe(JSON.stringify({ model: "m", messages: history }));
    expect(body(history.slice(37))).toBe(JSON.stringify({ model: "m", messages: history.slice(37) }));
    // Only the newest messages, not yet in a run (at most two runs' worth: runs.ts), keep bytes of their own.
    const own = history.filter((m) => forgetEncoded(m)).length;
    expect(own).toBeGreaterThan(0);
    expect(own).toBeLessThanOrEqual(64);
  });

  it("freezes a message once sent, under test: changing it in place (its cached bytes would go stale) throws", async () => {
    const cap = await captureServer(false);
    server = cap.server;
    const provider = createOpenAiProvider(
      { spec: { name: "custom", displayName: "c", defaultApiBase: null, keywords: [] }, apiKey: "k", apiBase: cap.url, extraHeaders: {}, model: "m" },
      { maxTokens: 100, temperature: 0, stream: false, backoff: { maxRetries: 0, baseDelayMs: 1, maxDelayMs: 1 }, sleep: async () => {} },
    );
    const [user, call] = turnMessages(0) as [Extract<ChatMessage, { role: "user" }>, Extract<ChatMessage, { role: "assistant" }>];
    await provider.chat({ messages: [user, call], tools });
    expect(process.env.NODE_ENV).toBe("test");
    expect(() => ((user as { content: unknown }).content = "changed")).toThrow(TypeError);
    expect(() => (call.tool_calls![0]!.function.arguments = "{}")).toThrow(TypeError);
    expect(() => (user.content as Array<{ type: string }>).push({ type: "text" })).toThrow(TypeError);
  });
});
