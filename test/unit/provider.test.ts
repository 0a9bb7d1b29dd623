import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { defaultConfig, type Config } from "../../src/config/index.js";
import { createOpenAiProvider, ModelCallError, type ProviderOptions } from "../../src/providers/client.js";
import { addUsage, assistantMessage, chatMessageSchema, modelResponseSchema, usageSchema, type ModelResponse } from "../../src/providers/messages.js";
import { createThinkFilter, parseToolArguments, stripThink } from "../../src/providers/parse.js";
import { resolveProvider, ProviderNotConfiguredError } from "../../src/providers/registry.js";
import { appendMessagesOps, listSessions, newSessionMeta, sessionMessages } from "../../src/store/sessions.js";
import { openStore } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi, type FakeStep } from "../fixtures/fake-openai.js";
import { createPrng, type Prng } from "../helpers/prng.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";

function configWith(model: string, providers: Config["providers"], provider = "auto"): Config {
  const c = defaultConfig();
  c.agents.defaults.model = model;
  c.agents.defaults.provider = provider;
  c.providers = providers;
  return c;
}
const key = (apiKey: string, apiBase: string | null = null) => ({ apiKey, apiBase, extraHeaders: null });

const makeProvider = (url: string, stream: boolean, opts: Partial<ProviderOptions> = {}) =>
  createOpenAiProvider(
    { spec: { name: "custom", displayName: "c", defaultApiBase: null, keywords: [] }, apiKey: "k", apiBase: url, extraHeaders: { "X-Test": "yes" }, model: "m" },
    { maxTokens: 100, temperature: 0, stream, backoff: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 5000 }, sleep: async () => {}, ...opts },
  );
const ask = { messages: [{ role: "user" as const, content: "hi" }], tools: [] };

describe("provider resolution", () => {
  it.each([
    ["explicit custom", configWith("my-model", { custom: key("", "http://127.0.0.1:9/v1"), openai: key("sk-1") }, "custom"), "custom", "http://127.0.0.1:9/v1", "my-model"],
    ["model prefix", configWith("deepseek/deepseek-chat", { openai: key("sk-1"), deepseek: key("sk-2") }), "deepseek", "https://api.deepseek.com/v1", "deepseek-chat"],
    ["keyword", configWith("qwen-max", { openai: key("sk-1"), dashscope: key("sk-3") }), "dashscope", "https://dashscope.aliyuncs.com/compatible-mode/v1", "qwen-max"],
    ["gateway key prefix keeps vendor prefix", configWith("anthropic/claude-sonnet-4", { openrouter: key("sk-or-v1-abc") }), "openrouter", "https://openrouter.ai/api/v1", "anthropic/claude-sonnet-4"],
    ["apiBase marker", configWith("some-model", { groq: key("x", "https://api.groq.com/openai/v1") }), "groq", "https://api.groq.com/openai/v1", "some-model"],
    ["local ollama without key", configWith("llama3", { ollama: key("", null) }, "ollama"), "ollama", "http://localhost:11434/v1", "llama3"],
    ["gemini keyword", configWith("gemini-2.5-flash", { gemini: key("AIza") }), "gemini", "https://generativelanguage.googleapis.com/v1beta/openai", "gemini-2.5-flash"],
  ])("%s", (_name, config, name, base, model) => {
    const r = resolveProvider(config);
    expect([r.spec.name, r.apiBase, r.model]).toEqual([name, base, model]);
  });

  it("says which key to set when nothing is configured", () => {
    expect(() => resolveProvider(configWith("gpt-4o", {}), "/h/config.json")).toThrow(
      "no LLM provider configured: set providers.openai.apiKey (or another provider's) in /h/config.json, or export TROUPE_PROVIDERS__OPENAI__API_KEY",
    );
    expect(() => resolveProvider(configWith("gpt-4o", {}, "deepseek"))).toThrow(/providers\.deepseek\.apiKey is not set/);
    expect(() => resolveProvider(configWith("x", {}, "custom"))).toThrow(/providers\.custom\.apiBase is not set/);
    expect(() => resolveProvider(configWith("x", {}, "nope"))).toThrow(ProviderNotConfiguredError);
  });
});

describe("tolerant parsing", () => {
  it("repairs tool arguments where it can and reports where it cannot", () => {
    expect(parseToolArguments('{"a": 1}')).toEqual({ value: { a: 1 } });
    expect(parseToolArguments("{'a': 1, b: 'x',}")).toEqual({ value: { a: 1, b: "x" } });
    expect(parseToolArguments("")).toEqual({ value: {} });
    expect(parseToolArguments("[1,2]")).toEqual({ error: "the arguments are not a JSON object" });
    expect(parseToolArguments("{{{:::")).toHaveProperty("error");
  });

  it("strips think blocks whole and streamed", () => {
    expect(stripThink("<think>plan</think>Hello")).toBe("Hello");
    expect(stripThink("<think>unfinished")).toBe("");
    const f = createThinkFilter();
    const out = ["<thi", "nk>secret</th", "ink>Vis", "ible <", "b>"].map((d) => f.push(d)).join("") + f.flush();
    expect(out).toBe("Visible <b>");
  });
});

describe("OpenAI-compatible client", () => {
  let fake: FakeOpenAi | undefined;
  afterEach(async () => fake?.close());
  const make = (url: string, stream: boolean, sleeps: number[] = []) => makeProvider(url, stream, { sleep: async (ms) => void sleeps.push(ms) });

  it.each([true, false])("returns content, tool calls and usage (stream=%s)", async (stream) => {
    fake = await startFakeOpenAi([
      { content: "<think>hmm</think>Let me look.", reasoning: "r1", toolCalls: [{ name: "read_file", arguments: { path: "a.txt" } }, { name: "list_dir", arguments: "{'path': '.'" }] },
    ]);
    const deltas: string[] = [];
    const r = await make(fake.url, stream).chat({ messages: [{ role: "user", content: "hi" }], tools: [], onDelta: (d) => deltas.push(d) });
    expect(r.content).toBe("Let me look.");
    expect(deltas.join("")).toBe("Let me look.");
    expect(r.reasoningContent).toBe("r1");
    expect(r.toolCalls.map((c) => [c.name, c.arguments])).toEqual([["read_file", { path: "a.txt" }], ["list_dir", { path: "." }]]);
    expect(r.usage).toEqual({ promptTokens: 10, completionTokens: 5, totalTokens: 15 });
    expect(fake.requests[0]?.headers["x-test"]).toBe("yes");
    expect(fake.requests[0]?.body.stream ?? false).toBe(stream);
  });

  it("retries 429 honouring Retry-After, and 5xx with backoff, then succeeds", async () => {
    fake = await startFakeOpenAi([{ status: 429, headers: { "retry-after": "2" } }, { status: 503 }, { content: "ok" }]);
    const sleeps: number[] = [];
    const r = await make(fake.url, true, sleeps).chat({ messages: [{ role: "user", content: "hi" }], tools: [] });
    expect(r.content).toBe("ok");
    expect(sleeps[0]).toBe(2000);
    expect(sleeps[1]).toBeGreaterThanOrEqual(10);
    expect(sleeps[1]).toBeLessThanOrEqual(20);
    expect(fake.requests).toHaveLength(3);
  });

  it("redacts a key the provider echoes in its error, its own and every configured one", async () => {
    fake = await startFakeOpenAi([
      { status: 401, errorMessage: "Incorrect API key provided: own-key-0123456789. You can find your API key at https://example.com." },
      { status: 400, errorMessage: "bad request; also saw other-key-abcdefgh" },
    ]);
    const p = createOpenAiProvider(
      { spec: { name: "custom", displayName: "c", defaultApiBase: null, keywords: [] }, apiKey: "own-key-0123456789", apiBase: fake.url, extraHeaders: {}, model: "m" },
      { maxTokens: 100, temperature: 0, stream: false, secrets: ["other-key-abcdefgh"] },
    );
    const ask = () => p.chat({ messages: [{ role: "user", content: "x" }], tools: [] });
    await expect(ask()).rejects.toThrow(
      `model call to custom failed: HTTP 401 from ${fake.url}: check providers.custom.apiKey (Incorrect API key provided: [REDACTED]. You can find your API key at https://example.com.)`,
    );
    await expect(ask()).rejects.toThrow(`model call to custom failed: HTTP 400 from ${fake.url}: the provider refused the request (bad request; also saw [REDACTED])`);
  });

  it("gives up after the bounded retries, and at once on a 400", async () => {
    fake = await startFakeOpenAi([{ status: 500 }, { status: 500 }, { status: 500 }, { status: 400 }]);
    const p = make(fake.url, false);
    await expect(p.chat({ messages: [{ role: "user", content: "x" }], tools: [] })).rejects.toThrow(/failed after 3 attempts: HTTP 500 from http:\/\/127\.0\.0\.1:\d+\/v1: the provider had a server error \(scripted 500\)$/);
    await expect(p.chat({ messages: [{ role: "user", content: "x" }], tools: [] })).rejects.toBeInstanceOf(ModelCallError);
    expect(fake.requests).toHaveLength(4);
  });
});

/** Values a sloppy or broken OpenAI-compatible server might put where a string or count belongs. */
const ODD: unknown[] = [
  0, 7, 12.7, -3, -0.5, 1e308, 2 ** 60, "5", "12.5", "-4", "lots", "", null, true, false, [], [1, "a"], {}, { a: 1 },
  { __proto__: { polluted: 1 } }, { constructor: "x" }, "__proto__", "call_ok", "read_file", '{"path":"a"}', "{broken",
];

function oddValue(r: Prng): unknown {
  return r.chance(0.15) ? undefined : structuredClone(r.pick(ODD));
}

/** An object with some of `keys` set to odd values (an absent key is a case too). */
function oddObject(r: Prng, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter(() => r.chance(0.8)).map((k) => [k, oddValue(r)]));
}

const oddUsage = (r: Prng) => (r.chance(0.2) ? oddValue(r) : oddObject(r, ["prompt_tokens", "completion_tokens", "total_tokens"]));
const oddToolCall = (r: Prng) =>
  r.chance(0.1) ? oddValue(r) : { ...oddObject(r, ["id", "index"]), type: r.chance(0.8) ? "function" : oddValue(r), function: r.chance(0.1) ? oddValue(r) : oddObject(r, ["name", "arguments"]) };
const oddList = <T>(r: Prng, make: () => T) => (r.chance(0.15) ? oddValue(r) : Array.from({ length: r.int(3) }, make));

function oddCompletion(r: Prng): unknown {
  const message = r.chance(0.1) ? oddValue(r) : { role: "assistant", ...oddObject(r, ["content", "reasoning_content"]), tool_calls: oddList(r, () => oddToolCall(r)) };
  const choices = oddList(r, () => ({ index: 0, finish_reason: oddValue(r), message }));
  return { id: "x", object: "chat.completion", created: 0, model: "m", choices, usage: oddUsage(r) };
}

function oddChunks(r: Prng): unknown[] {
  return Array.from({ length: 1 + r.int(5) }, () => {
    const delta = r.chance(0.1) ? oddValue(r) : { ...oddObject(r, ["content", "reasoning_content"]), tool_calls: oddList(r, () => oddToolCall(r)) };
    const choices = oddList(r, () => ({ index: 0, delta, finish_reason: oddValue(r) }));
    return { id: "x", object: "chat.completion.chunk", created: 0, model: "m", choices, ...(r.chance(0.4) ? { usage: oddUsage(r) } : {}) };
  });
}

describe("what the model sends is parsed at the boundary", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  afterEach(async () => fake?.close());

  it("coerces token counts to non-negative integers and tool-call ids and names to strings", async () => {
    const usage = { prompt_tokens: 12.7, completion_tokens: "5", total_tokens: -3 };
    const call = { id: 42, type: "function", function: { name: 7, arguments: { path: "a.txt" } } };
    fake = await startFakeOpenAi([
      { raw: { id: "x", choices: [{ index: 0, finish_reason: "tool_calls", message: { role: "assistant", content: null, tool_calls: [call] } }], usage } },
      { rawChunks: [{ id: "x", choices: [{ index: 0, delta: { tool_calls: [{ index: 0, ...call }] }, finish_reason: null }] }, { id: "x", choices: [], usage }] },
    ]);
    for (const stream of [false, true]) {
      const r = await makeProvider(fake.url, stream).chat(ask);
      expect(r.usage).toEqual({ promptTokens: 12, completionTokens: 5, totalTokens: 17 });
      expect(r.toolCalls.map((c) => [c.id, c.name, c.arguments])).toEqual([["42", "7", { path: "a.txt" }]]);
    }
    // A session's running total stays a safe integer, which its record's schema requires.
    const max = Number.MAX_SAFE_INTEGER;
    const total = addUsage({ promptTokens: max, completionTokens: 1, totalTokens: max }, { promptTokens: 5, completionTokens: 2, totalTokens: max });
    expect(total).toEqual({ promptTokens: max, completionTokens: 3, totalTokens: max });
    expect(usageSchema.safeParse(total).success).toBe(true);
  });

  it("never returns what a stored record cannot hold: fuzzed replies give a valid response or a ModelCallError", async () => {
    const random = createPrng(0x5eed);
    const cases: FakeStep[] = Array.from({ length: 200 }, (_, i) => (i % 2 ? { rawChunks: oddChunks(random) } : { raw: oddCompletion(random) }));
    fake = await startFakeOpenAi(cases);
    const store = await openStore(join(await tmp(), "store"));
    const outcomes = { ok: 0, refused: 0 };
    try {
      for (let i = 0; i < cases.length; i++) {
        let r: ModelResponse;
        try {
          r = await makeProvider(fake.url, i % 2 === 1, { backoff: { maxRetries: 0, baseDelayMs: 1, maxDelayMs: 1 } }).chat(ask);
        } catch (err) {
          expect(err, `case ${i}`).toBeInstanceOf(ModelCallError);
          outcomes.refused++;
          continue;
        }
        outcomes.ok++;
        expect(modelResponseSchema.safeParse(r).error, `case ${i}: ${JSON.stringify(r)}`).toBeUndefined();
        const reply = assistantMessage(r);
        const results = r.toolCalls.map((c) => ({ role: "tool" as const, tool_call_id: c.id, name: c.name, content: "done" }));
        for (const m of [reply, ...results]) expect(chatMessageSchema.safeParse(m).error, `case ${i}`).toBeUndefined();
        // What a turn stores from it: the messages and the session's usage.
        const { ops, meta } = appendMessagesOps(newSessionMeta(`api:fuzz${i}`, i), [reply, ...results], `t${i}`, i, r.usage, true);
        await store.batch(ops);
        expect((await sessionMessages(store, meta)).length).toBe(1 + results.length);
      }
      expect((await listSessions(store)).length).toBe(outcomes.ok);
    } finally {
      await store.close();
    }
    // The cases exercise both outcomes, not one.
    expect(outcomes.ok).toBeGreaterThan(50);
    expect(outcomes.refused).toBeGreaterThan(0);
  }, 120_000);

  it("assembles streamed tool calls that come without an index, and gives repeated ids their own", async () => {
    const delta = (tc: Record<string, unknown>) => ({ id: "x", choices: [{ index: 0, delta: { tool_calls: [tc] }, finish_reason: null }] });
    fake = await startFakeOpenAi([
      {
        rawChunks: [
          delta({ id: "a", function: { name: "read_file", arguments: '{"pa' } }),
          delta({ function: { arguments: 'th": "x"}' } }),
          delta({ id: "b", function: { name: "list_dir", arguments: "{}" } }),
          delta({ id: "b", function: { arguments: "" } }),
          delta({ index: 5, id: "a", function: { name: "glob", arguments: "{}" } }),
        ],
      },
    ]);
    const r = await makeProvider(fake.url, true).chat(ask);
    expect(r.toolCalls.map((c) => [c.id, c.name, c.arguments])).toEqual([
      ["a", "read_file", { path: "x" }],
      ["b", "list_dir", {}],
      ["a_5", "glob", {}],
    ]);
  });

  it("says plainly what is wrong with a reply that has no choices", async () => {
    fake = await startFakeOpenAi([{ raw: { id: "x", choices: "nope" } }, { raw: { error: null, choices: [{ message: 5 }] } }]);
    await expect(makeProvider(fake.url, false).chat(ask)).rejects.toThrow(/model call to custom failed: the reply has no choices/);
    await expect(makeProvider(fake.url, false).chat(ask)).rejects.toThrow(/the reply's message is not an object/);
  });
});

describe("what a turn keeps of a reply is bounded", () => {
  let fake: FakeOpenAi | undefined;
  afterEach(async () => fake?.close());
  const big = "a".repeat(2_000_000);
  const bigArgs = "a".repeat(200_000);

  it.each([false, true])("cuts content and reasoning above maxReplyChars with a note (stream=%s)", async (stream) => {
    fake = await startFakeOpenAi([{ content: `start ${big} end`, reasoning: big, chunkSize: 65_536 }]);
    const deltas: string[] = [];
    const r = await makeProvider(fake.url, stream, { maxReplyChars: 1000 }).chat({ ...ask, onDelta: (d) => deltas.push(d) });
    expect(r.content.startsWith(`start ${"a".repeat(994)}`)).toBe(true);
    expect(r.content).toMatch(/\n\n\[reply cut: the model sent 2000010 characters; only the first 1000 are kept\]$/);
    expect(r.content.length).toBeLessThan(1200);
    expect(r.reasoningContent?.length).toBeLessThan(1200);
    // What streamed out was bounded too.
    expect(deltas.join("").length).toBeLessThan(1200);
  });

  it.each([false, true])("refuses a huge arguments string as an argumentsError, the calls of one reply sharing the limit (stream=%s)", async (stream) => {
    const medium = "m".repeat(560);
    fake = await startFakeOpenAi([
      {
        toolCalls: [
          { name: "write_file", arguments: { path: "x", content: bigArgs } },
          { name: "read_file", arguments: { path: "y" } },
          { name: "write_file", arguments: { path: "m1", content: medium } },
          { name: "write_file", arguments: { path: "m2", content: medium } },
        ],
      },
    ]);
    const r = await makeProvider(fake.url, stream, { maxReplyChars: 1000 }).chat(ask);
    const [huge, small, first, second] = r.toolCalls;
    expect(huge?.arguments).toBeNull();
    expect(huge?.argumentsError).toMatch(/^the arguments are 2000\d\d characters, over the limit of 1000 for the tool calls of one reply/);
    expect(huge?.rawArguments.length).toBeLessThan(100);
    // The refused call gave its share back: the calls after it still fit, until together they do not.
    expect(small?.arguments).toEqual({ path: "y" });
    expect(first?.arguments).toEqual({ path: "m1", content: medium });
    expect(second?.arguments).toBeNull();
    expect(second?.argumentsError).toMatch(/^the arguments are 5\d\d characters, over the limit of 1000/);
    expect(chatMessageSchema.safeParse(assistantMessage(r)).success).toBe(true);
  });
});

describe("a stalled model endpoint", () => {
  let fake: FakeOpenAi | undefined;
  afterEach(async () => fake?.close());
  const idleTimeoutMs = 500;

  it.each([
    ["headers then nothing, streamed", true, "headers"],
    ["mid-stream", true, "midstream"],
    ["headers then nothing, not streamed", false, "headers"],
  ] as const)("is abandoned after the idle time and retried: %s", async (_name, stream, stall) => {
    fake = await startFakeOpenAi([{ content: "partial answer", stall }, { content: "recovered" }]);
    const warnings: string[] = [];
    const logger = { warn: (o: { err: string }) => warnings.push(o.err) } as unknown as ProviderOptions["logger"];
    const r = await makeProvider(fake.url, stream, { idleTimeoutMs, logger }).chat(ask);
    expect(r.content).toBe("recovered");
    expect(fake.requests).toHaveLength(2);
    expect(warnings).toEqual([`no data from ${fake.url} for 0.5 s (model idle timeout); the call was abandoned`]);
    // The stalled connection was closed, not left open.
    await until(() => fake?.inFlight() === 0, 5_000, "the stalled request to end");
  });

  it("fails with a message naming the endpoint and the idle time when every attempt stalls", async () => {
    fake = await startFakeOpenAi([{ content: "x", stall: "headers" }, { content: "x", stall: "midstream" }, { content: "x", stall: "headers" }]);
    const err = await makeProvider(fake.url, true, { idleTimeoutMs }).chat(ask).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelCallError);
    expect((err as Error).message).toBe(`model call to custom failed after 3 attempts: no data from ${fake.url} for 0.5 s (model idle timeout); the call was abandoned`);
  });

  it("keeps a slow but live stream going, and stops the whole call at the total timeout", async () => {
    // Bytes keep coming (every 100 ms), so the idle timeout never fires ...
    fake = await startFakeOpenAi([{ content: "slow but steady", chunkSize: 3, chunkDelayMs: 100 }]);
    expect((await makeProvider(fake.url, true, { idleTimeoutMs: 400 }).chat(ask)).content).toBe("slow but steady");
    // ... but the total timeout bounds a call however it trickles, and is not retried.
    fake.push({ content: "x".repeat(200), chunkSize: 1, chunkDelayMs: 50 });
    const err = await makeProvider(fake.url, true, { idleTimeoutMs: 400, timeoutMs: 700 }).chat(ask).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelCallError);
    expect((err as Error).message).toBe(`model call to custom failed: no complete reply from ${fake.url} within 0.7 s (model timeout)`);
    expect(fake.requests).toHaveLength(2);
  });

  it("does not count a stall against the caller's own abort", async () => {
    fake = await startFakeOpenAi([{ content: "x", stall: "headers" }]);
    const stop = new AbortController();
    const p = makeProvider(fake.url, true, { idleTimeoutMs: 10_000 }).chat({ ...ask, signal: stop.signal });
    await until(() => fake?.inFlight() === 1, 5_000, "the request to arrive");
    stop.abort(new Error("user cancelled"));
    await expect(p).rejects.not.toBeInstanceOf(ModelCallError);
    expect(fake.requests).toHaveLength(1);
  });
});
