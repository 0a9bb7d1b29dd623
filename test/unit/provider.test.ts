import { afterEach, describe, expect, it } from "vitest";
import { defaultConfig, type Config } from "../../src/config/index.js";
import { createOpenAiProvider, ModelCallError } from "../../src/providers/client.js";
import { createThinkFilter, parseToolArguments, stripThink } from "../../src/providers/parse.js";
import { resolveProvider, ProviderNotConfiguredError } from "../../src/providers/registry.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";

function configWith(model: string, providers: Config["providers"], provider = "auto"): Config {
  const c = defaultConfig();
  c.agents.defaults.model = model;
  c.agents.defaults.provider = provider;
  c.providers = providers;
  return c;
}
const key = (apiKey: string, apiBase: string | null = null) => ({ apiKey, apiBase, extraHeaders: null });

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
    expect(stripThink("Hi <think>unfinished")).toBe("Hi");
    const f = createThinkFilter();
    const out = ["<thi", "nk>secret</th", "ink>Vis", "ible <", "b>"].map(f).join("");
    expect(out).toBe("Visible <b>");
  });
});

describe("OpenAI-compatible client", () => {
  let fake: FakeOpenAi | undefined;
  afterEach(async () => fake?.close());
  const make = (url: string, stream: boolean, sleeps: number[] = []) =>
    createOpenAiProvider(
      { spec: { name: "custom", displayName: "c", defaultApiBase: null, keywords: [] }, apiKey: "k", apiBase: url, extraHeaders: { "X-Test": "yes" }, model: "m" },
      { maxTokens: 100, temperature: 0, stream, backoff: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 5000 }, sleep: async (ms) => void sleeps.push(ms) },
    );

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
    await expect(ask()).rejects.toThrow("model call to custom failed (HTTP 401): 401 Incorrect API key provided: [REDACTED]. You can find your API key at https://example.com.");
    await expect(ask()).rejects.toThrow("model call to custom failed (HTTP 400): 400 bad request; also saw [REDACTED]");
  });

  it("gives up after the bounded retries, and at once on a 400", async () => {
    fake = await startFakeOpenAi([{ status: 500 }, { status: 500 }, { status: 500 }, { status: 400 }]);
    const p = make(fake.url, false);
    await expect(p.chat({ messages: [{ role: "user", content: "x" }], tools: [] })).rejects.toThrow(/failed after 3 attempts \(HTTP 500\)/);
    await expect(p.chat({ messages: [{ role: "user", content: "x" }], tools: [] })).rejects.toBeInstanceOf(ModelCallError);
    expect(fake.requests).toHaveLength(4);
  });
});
