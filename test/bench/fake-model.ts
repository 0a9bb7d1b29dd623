import { startFakeOpenAi } from "../fixtures/fake-openai.js";

/**
 * The benchmark's model, in its own process so its bookkeeping does not count against troupe's
 * memory: each turn makes `calls` model calls, all but the last answered with a tool call (list_dir);
 * a request without tools (the Consolidator's summary call) gets a summary. The last answer is "done",
 * or, when the turn's user message asks for "an answer of N words", N words of plain English (the
 * soak bench's sessions each ask their own N, so their histories reach their token budget early and
 * each at its own pace: see soak.bench.ts).
 * Usage: fake-model.ts <latency ms> [calls, default 2]; prints the base URL on stdout.
 */
const latency = Number(process.argv[2] ?? "0");
const calls = Number(process.argv[3] ?? "2");
const WORDS = "the quick brown fox jumps over a lazy dog while seven small birds sing about rain in the old green garden near our house".split(" ");
/** `n` common words (about a token each), whole: a long answer is sent in one chunk, not in 3-character pieces. */
const answerOf = (n: number): string => Array.from({ length: n }, (_, i) => WORDS[i % WORDS.length]).join(" ");
const fake = await startFakeOpenAi([], (req) => {
  // A request without tools is the Consolidator's: it gets a summary.
  if (!req.body.tools?.length) return { content: "The user listed the workspace; it was listed.", delayMs: latency };
  // Tool results of this turn only: those after the last user message.
  const lastUser = req.body.messages.findLastIndex((m) => m.role === "user");
  const toolResults = req.body.messages.slice(lastUser + 1).filter((m) => m.role === "tool").length;
  const user = req.body.messages[lastUser]?.content;
  const asked = /an answer of (\d+) words/.exec(typeof user === "string" ? user : JSON.stringify(user ?? ""));
  // Keep nothing of the request while the answer waits out its latency: 100 bodies (the tools'
  // schemas, the history) held 50 ms each outlived the young generation, and the model process
  // spent ~25% of its CPU in GC, on the 2 CPUs troupe runs on.
  req.body.messages.length = 0;
  req.body.tools.length = 0;
  const content = asked ? answerOf(Number(asked[1])) : "done";
  return toolResults >= calls - 1 ? { content, chunkSize: content.length, delayMs: latency } : { toolCalls: [{ name: "list_dir", arguments: {} }], delayMs: latency };
}, { keepRequests: false });
console.log(fake.url);
// Exit at once: close() would wait for kept-alive connections a client may still hold open.
process.on("SIGTERM", () => process.exit(0));
