import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

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

function respond(res: ServerResponse, answer: Answer, stream: boolean) {
  const id = `chatcmpl-${served++}`;
  const toolCalls = "tool" in answer ? [{ id: `call_${id}`, type: "function", function: { name: answer.tool, arguments: "{}" } }] : undefined;
  const finish = toolCalls ? "tool_calls" : "stop";
  if (!stream) {
    const message = { role: "assistant", content: "content" in answer ? answer.content : null, ...(toolCalls ? { tool_calls: toolCalls } : {}) };
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ id, object: "chat.completion", created: 0, model: "fake-model", choices: [{ index: 0, finish_reason: finish, message }], usage }));
    return;
  }
  const event = (delta: Record<string, unknown>, finishReason: string | null = null) =>
    `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 0, model: "fake-model", choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`;
  const events = [event({ role: "assistant" })];
  if ("content" in answer) events.push(event({ content: answer.content }));
  else events.push(event({ tool_calls: [{ index: 0, id: toolCalls![0]!.id, type: "function", function: { name: answer.tool, arguments: "" } }] }), event({ tool_calls: [{ index: 0, function: { arguments: "{}" } }] }));
  events.push(event({}, finish), `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 0, model: "fake-model", choices: [], usage })}\n\n`, "data: [DONE]\n\n");
  res.writeHead(200, { "content-type": "text/event-stream" }).end(events.join(""));
}

const server = createServer((req, res) => {
  if (req.method !== "POST" || !req.url?.split("?")[0]!.endsWith("/chat/completions")) return void res.writeHead(404).end('{"error":{"message":"not found"}}');
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString();
    const answer = answerFor(body);
    const stream = /"stream"\s*:\s*true/.test(body);
    setTimeout(() => respond(res, answer, stream), latency);
  });
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
console.log(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`);
// Exit at once: close() would wait for kept-alive connections a client may still hold open.
process.on("SIGTERM", () => process.exit(0));
