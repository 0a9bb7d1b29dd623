/**
 * The model client's own CPU per call (part of `npm run bench`): troupe's client (node:http,
 * src/providers/transport.ts) beside the openai SDK over global fetch (undici), the path it
 * replaced, and beside the floor: the same call by hand (node:http with a keep-alive agent,
 * JSON.stringify, JSON.parse, nothing else), against the same zero-latency fake model in another
 * process, with the same request (a ~8 KB system prompt, 15 tool schemas). Blocks of calls
 * alternate between the three; medians.
 */
import { Agent, request } from "node:http";
import OpenAI from "openai";
import { createOpenAiProvider } from "../../src/providers/client.js";
import type { ResolvedProvider } from "../../src/providers/registry.js";
import { fakeModel } from "./harness.js";
import { record } from "./summary.js";

const BLOCK = Number(process.env.TROUPE_BENCH_MODEL_BLOCK ?? 200);
const ROUNDS = Number(process.env.TROUPE_BENCH_MODEL_ROUNDS ?? 7);

const model = await fakeModel(0, 1);
const tools = Array.from({ length: 15 }, (_, i) => ({
  type: "function" as const,
  function: {
    name: `tool_${i}`,
    description: `Tool ${i}: ${"does something useful with the workspace; ".repeat(6)}`,
    parameters: { type: "object", properties: { path: { type: "string", description: "a path in the workspace" }, limit: { type: "integer", minimum: 1 } }, required: ["path"] },
  },
}));
const messages = [
  { role: "system" as const, content: "You are a helpful assistant. ".repeat(280) },
  { role: "user" as const, content: "list the workspace" },
];
const resolved: ResolvedProvider = { spec: { name: "custom", displayName: "c", defaultApiBase: null, keywords: [] }, apiKey: "k", apiBase: model.url, extraHeaders: {}, model: "fake-model" };

type Client = { name: string; call: (stream: boolean) => Promise<unknown> };
const ours = (stream: boolean) => createOpenAiProvider(resolved, { maxTokens: 1000, temperature: 0, stream });
const troupe = { false: ours(false), true: ours(true) };
const sdk = new OpenAI({ apiKey: "k", baseURL: model.url, maxRetries: 0 });
const agent = new Agent({ keepAlive: true });
const endpoint = new URL(`${model.url.replace(/\/$/, "")}/chat/completions`);
/** The call by hand: the least a client can do (no retries, limits, checks or streaming: a streamed reply is read whole). */
const byHand = (stream: boolean) =>
  new Promise<unknown>((resolve, reject) => {
    const body = JSON.stringify({ model: "fake-model", messages, max_tokens: 1000, temperature: 0, tool_choice: "auto", stream, tools });
    const req = request(endpoint, { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        resolve(stream ? text.split("\n\n").filter((e) => e.startsWith("data: {")).map((e) => JSON.parse(e.slice(6))) : JSON.parse(text));
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
const clients: Client[] = [
  { name: "troupe (node:http)", call: (stream) => troupe[`${stream}`].chat({ messages, tools }) },
  { name: "by hand (floor)", call: byHand },
  {
    name: "openai SDK + fetch",
    call: async (stream) => {
      if (!stream) return sdk.chat.completions.create({ model: "fake-model", messages, tools, max_tokens: 1000, temperature: 0 });
      const chunks = await sdk.chat.completions.create({ model: "fake-model", messages, tools, max_tokens: 1000, temperature: 0, stream: true });
      for await (const c of chunks) void c;
    },
  },
];

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return (s[(s.length - 1) >> 1]! + s[s.length >> 1]!) / 2;
};

/** CPU of this process per call, in ms, over one block of sequential calls. */
async function block(c: Client, stream: boolean): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < BLOCK; i++) await c.call(stream);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / BLOCK;
}

console.log(`## model client CPU per call (median of ${ROUNDS} alternating blocks of ${BLOCK} calls; zero-latency fake model in another process)`);
for (const stream of [false, true]) {
  const per: Record<string, number[]> = {};
  for (const c of clients) await block(c, stream); // warm-up
  for (let r = 0; r < ROUNDS; r++) for (const c of clients) (per[c.name] ??= []).push(await block(c, stream));
  const [ours, floor, sdkMs] = clients.map((c) => median(per[c.name]!)) as [number, number, number];
  const ratio = ours / sdkMs;
  console.log(
    `${stream ? "streamed    " : "not streamed"}  ${clients.map((c, i) => `${c.name} ${[ours, floor, sdkMs][i]!.toFixed(3)} ms`).join("   ")}   troupe/SDK ${ratio.toFixed(2)}×   troupe/floor ${(ours / floor).toFixed(2)}×`,
  );
  record({ figure: `model call CPU, ${stream ? "streamed" : "not streamed"} (vs SDK+fetch)`, target: "-", measured: `${ours.toFixed(3)} ms / ${sdkMs.toFixed(3)} ms = ${ratio.toFixed(2)}×` });
  record({ figure: `model call CPU, ${stream ? "streamed" : "not streamed"} (vs by hand)`, target: "-", measured: `${ours.toFixed(3)} ms / ${floor.toFixed(3)} ms = ${(ours / floor).toFixed(2)}×` });
}
agent.destroy();
model.stop();
