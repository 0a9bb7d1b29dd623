import { createServer, type AddressInfo, type Socket } from "node:net";

/**
 * The benchmark's model, in its own process so its bookkeeping does not count against troupe's
 * memory: each turn makes `calls` model calls, all but the last answered with a tool call (list_dir);
 * a request without tools (the Consolidator's summary call) gets a summary. The last answer is "done",
 * or, when the turn's user message asks for "an answer of N words", N words of plain English (the
 * soak bench's sessions each ask their own N, so their histories reach their token budget early and
 * each at its own pace: see soak.bench.ts). Answers as OpenAI's chat completions do, streamed (SSE)
 * or not, as the request asks.
 *
 * It runs on the CPUs troupe runs on, where a real model does not: so it reads a request by scanning
 * its JSON text for the few things it needs, not by parsing it, and keeps nothing of it. Parsing every request with the test fixture
 * (test/fixtures/fake-openai.ts) cost ~0.23 ms of CPU a request: ~460 ms in the 1,000-session burst.
 * For the same reason it speaks HTTP/1.1 on a plain socket (serve, below), not through node:http:
 * with troupe's 14 KB requests, Node's HTTP server cost ~0.17 ms of CPU a request, ~350 ms of the
 * two CPUs in the 1,000-session burst (22% of one CPU); this ~0.06 ms.
 * Usage: fake-model.ts <latency ms> [calls, default 2]; prints the base URL on stdout.
 */
const latency = Number(process.argv[2] ?? "0");
const calls = Number(process.argv[3] ?? "2");
const WORDS = "the quick brown fox jumps over a lazy dog while seven small birds sing about rain in the old green garden near our house".split(" ");
/** `n` common words (about a token each), whole: a long answer is sent in one chunk, not in 3-character pieces. */
const answerOf = (n: number): string => Array.from({ length: n }, (_, i) => WORDS[i % WORDS.length]).join(" ");

type Answer = { content: string } | { tool: string };

/** What to answer, read off the request's JSON text (with or without spaces between its tokens: jnano's client writes them too). */
function answerFor(body: string): Answer {
  // A request without tools is the Consolidator's: it gets a summary.
  if (!/"tools"\s*:\s*\[\s*\{/.test(body)) return { content: "The user listed the workspace; it was listed." };
  // Tool results of this turn only: those after the last user message.
  let lastUser = -1;
  for (const m of body.matchAll(/"role"\s*:\s*"user"/g)) lastUser = m.index;
  const turn = lastUser < 0 ? body : body.slice(lastUser);
  const toolResults = [...turn.matchAll(/"role"\s*:\s*"tool"/g)].length;
  if (toolResults < calls - 1) return { tool: "list_dir" };
  const asked = /an answer of (\d+) words/.exec(turn);
  return { content: asked ? answerOf(Number(asked[1])) : "done" };
}

let served = 0;
const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };

/** The completion as OpenAI sends it: its content type and body (one JSON, or SSE events when streamed). */
function completion(answer: Answer, stream: boolean): { type: string; body: string } {
  const id = `chatcmpl-${served++}`;
  const toolCalls = "tool" in answer ? [{ id: `call_${id}`, type: "function", function: { name: answer.tool, arguments: "{}" } }] : undefined;
  const finish = toolCalls ? "tool_calls" : "stop";
  if (!stream) {
    const message = { role: "assistant", content: "content" in answer ? answer.content : null, ...(toolCalls ? { tool_calls: toolCalls } : {}) };
    return { type: "application/json", body: JSON.stringify({ id, object: "chat.completion", created: 0, model: "fake-model", choices: [{ index: 0, finish_reason: finish, message }], usage }) };
  }
  const event = (delta: Record<string, unknown>, finishReason: string | null = null) =>
    `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 0, model: "fake-model", choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`;
  const events = [event({ role: "assistant" })];
  if ("content" in answer) events.push(event({ content: answer.content }));
  else events.push(event({ tool_calls: [{ index: 0, id: toolCalls![0]!.id, type: "function", function: { name: answer.tool, arguments: "" } }] }), event({ tool_calls: [{ index: 0, function: { arguments: "{}" } }] }));
  events.push(event({}, finish), `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 0, model: "fake-model", choices: [], usage })}\n\n`, "data: [DONE]\n\n");
  return { type: "text/event-stream", body: events.join("") };
}

const HEAD_END = Buffer.from("\r\n\r\n");
const CRLF = Buffer.from("\r\n");

/** A request's body once it has all arrived: its length and the bytes it takes from `data` (headers included); undefined while incomplete. */
function bodyOf(head: string, data: Buffer, start: number): { body: Buffer; end: number } | undefined {
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (!/\r\ntransfer-encoding:[^\r]*chunked/i.test(head)) {
    const n = length ? Number(length[1]) : 0;
    return data.length - start < n ? undefined : { body: data.subarray(start, start + n), end: start + n };
  }
  const pieces: Buffer[] = [];
  for (let at = start; ; ) {
    const lineEnd = data.indexOf(CRLF, at);
    if (lineEnd < 0) return undefined;
    const size = parseInt(data.toString("latin1", at, lineEnd), 16);
    if (data.length < lineEnd + 2 + size + 2) return undefined;
    if (size === 0) return { body: Buffer.concat(pieces), end: lineEnd + 4 };
    pieces.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}

/**
 * One client connection: HTTP/1.1 POSTs (a Content-Length or chunked body), kept alive, each answered
 * after the model's latency, in the order they came (pipelined requests too).
 */
function serve(socket: Socket) {
  let data: Buffer = Buffer.alloc(0);
  const answers: Array<{ text?: string }> = [];
  const send = (slot: { text?: string }, status: string, type: string, body: string) => {
    slot.text = `HTTP/1.1 ${status}\r\ncontent-type: ${type}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: keep-alive\r\n\r\n${body}`;
    while (answers[0]?.text !== undefined) socket.write(answers.shift()!.text!);
  };
  socket.setNoDelay(true);
  socket.on("error", () => socket.destroy());
  socket.on("data", (chunk: Buffer) => {
    data = data.length ? Buffer.concat([data, chunk]) : chunk;
    for (;;) {
      const headEnd = data.indexOf(HEAD_END);
      if (headEnd < 0) return;
      const head = data.toString("latin1", 0, headEnd);
      const request = bodyOf(head, data, headEnd + 4);
      if (!request) return;
      data = data.subarray(request.end);
      const slot: { text?: string } = {};
      answers.push(slot);
      const [method, url = ""] = head.slice(0, head.indexOf("\r\n")).split(" ");
      if (method !== "POST" || !url.split("?")[0]!.endsWith("/chat/completions")) {
        send(slot, "404 Not Found", "application/json", '{"error":{"message":"not found"}}');
        continue;
      }
      // Its JSON text is scanned for ASCII tokens only: latin1 is a plain copy, where UTF-8 decodes (11 µs for 14 KB).
      const body = request.body.toString("latin1");
      const answer = answerFor(body);
      const stream = /"stream"\s*:\s*true/.test(body);
      setTimeout(() => {
        const { type, body: text } = completion(answer, stream);
        send(slot, "200 OK", type, text);
      }, latency);
    }
  });
}

const server = createServer(serve);
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
console.log(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`);
// Exit at once: close() would wait for kept-alive connections a client may still hold open.
process.on("SIGTERM", () => process.exit(0));
