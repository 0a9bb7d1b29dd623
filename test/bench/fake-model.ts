import { startFakeOpenAi } from "../fixtures/fake-openai.js";

/**
 * The benchmark's model, in its own process so its bookkeeping does not count against troupe's
 * memory: a user message gets one tool call (list_dir), a tool result gets the final answer.
 * Usage: fake-model.ts <latency ms>; prints the base URL on stdout.
 */
const latency = Number(process.argv[2] ?? "0");
const fake = await startFakeOpenAi([], (req) => {
  const last = req.body.messages.at(-1);
  req.body.messages.length = 0; // keep nothing per request
  return last?.role === "tool" ? { content: "done", delayMs: latency } : { toolCalls: [{ name: "list_dir", arguments: {} }], delayMs: latency };
});
fake.requests.length = 0;
setInterval(() => (fake.requests.length = 0), 1_000).unref();
console.log(fake.url);
process.on("SIGTERM", () => void fake.close().then(() => process.exit(0)));
