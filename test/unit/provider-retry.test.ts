import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/index.js";
import { createOpenAiProvider, ModelCallError, type LlmProvider, type ProviderOptions } from "../../src/providers/client.js";
import { fallbackChoices, withFallbacks } from "../../src/providers/fallback.js";
import { ProviderNotConfiguredError, resolveProvider, type ResolvedProvider } from "../../src/providers/registry.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";

const custom = (url: string, model = "m"): ResolvedProvider => ({ spec: { name: "custom", displayName: "c", defaultApiBase: null, keywords: [] }, apiKey: "k", apiBase: url, extraHeaders: {}, model });
const options = (sleeps: number[], more: Partial<ProviderOptions> = {}): ProviderOptions => ({
  maxTokens: 100,
  temperature: 0,
  stream: false,
  backoff: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 5000 },
  sleep: async (ms) => void sleeps.push(ms),
  ...more,
});
const ask = (signal?: AbortSignal) => ({ messages: [{ role: "user" as const, content: "hi" }], tools: [], signal });
const QUOTA = { status: 429, errorType: "insufficient_quota", errorCode: "insufficient_quota", errorMessage: "You exceeded your current quota, please check your plan and billing details." };

describe("quota errors are not retried (nanobot's test_chat_with_retry_stops_on_429_quota_exhausted)", () => {
  let fake: FakeOpenAi | undefined;
  afterEach(async () => fake?.close());

  it.each([
    ["OpenAI's insufficient_quota type and code", QUOTA],
    ["only the wording", { status: 429, errorMessage: "You exceeded your current quota" }],
    ["a billing code", { status: 429, errorCode: "billing_hard_limit_reached" }],
    ["402 Payment Required", { status: 402 }],
  ])("%s: one request, no wait, and the error says so", async (_what, step) => {
    fake = await startFakeOpenAi([step, { content: "never" }]);
    const sleeps: number[] = [];
    const p = createOpenAiProvider(custom(fake.url), options(sleeps));
    await expect(p.chat(ask())).rejects.toThrow(/model call to custom failed: HTTP 4(29|02) from .*: the account is out of quota or credit \(not retried\): check its plan and billing/);
    expect(fake.requests).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it("a plain rate limit is still retried (nanobot's test_chat_with_retry_retries_429_transient_rate_limit)", async () => {
    fake = await startFakeOpenAi([{ status: 429, errorCode: "rate_limit_exceeded", headers: { "retry-after-ms": "200" } }, { content: "ok" }]);
    const sleeps: number[] = [];
    expect((await createOpenAiProvider(custom(fake.url), options(sleeps)).chat(ask())).content).toBe("ok");
    expect(sleeps).toEqual([200]);
  });

  it("is not retried in persistent mode either", async () => {
    fake = await startFakeOpenAi([QUOTA, { content: "never" }]);
    const p = createOpenAiProvider(custom(fake.url), options([], { retryMode: "persistent" }));
    await expect(p.chat(ask())).rejects.toBeInstanceOf(ModelCallError);
    expect(fake.requests).toHaveLength(1);
  });
});

describe('providerRetryMode "persistent"', () => {
  let fake: FakeOpenAi | undefined;
  afterEach(async () => fake?.close());

  it("retries transient errors past maxRetries until one succeeds, waiting at most 60 s", async () => {
    fake = await startFakeOpenAi([...Array.from({ length: 12 }, () => ({ status: 503 })), { content: "finally" }]);
    const sleeps: number[] = [];
    const r = await createOpenAiProvider(custom(fake.url), options(sleeps, { retryMode: "persistent", backoff: { maxRetries: 2, baseDelayMs: 1000, maxDelayMs: 5000 } })).chat(ask());
    expect(r.content).toBe("finally");
    expect(fake.requests).toHaveLength(13);
    expect(sleeps).toHaveLength(12);
    expect(Math.max(...sleeps)).toBeLessThanOrEqual(60_000);
    expect(sleeps.at(-1)).toBeGreaterThan(5000); // past the standard cap: it kept backing off
  });

  it("standard mode gives up after maxRetries", async () => {
    fake = await startFakeOpenAi(Array.from({ length: 5 }, () => ({ status: 503 })));
    await expect(createOpenAiProvider(custom(fake.url), options([])).chat(ask())).rejects.toThrow(/failed after 3 attempts: HTTP 503/);
  });

  it("still honours /stop: an abort during the wait ends the call at once", async () => {
    fake = await startFakeOpenAi([], () => ({ status: 503 }));
    const stop = new AbortController();
    let waits = 0;
    const p = createOpenAiProvider(custom(fake.url), {
      ...options([], { retryMode: "persistent" }),
      sleep: (ms, signal) =>
        new Promise((resolve, reject) => {
          if (++waits === 3) stop.abort(new Error("stopped by the user"));
          if (signal?.aborted) return reject(signal.reason);
          const t = setTimeout(resolve, 1);
          signal?.addEventListener("abort", () => (clearTimeout(t), reject(signal.reason)), { once: true });
        }),
    });
    await expect(p.chat(ask(stop.signal))).rejects.toThrow("stopped by the user");
    const sent = fake.requests.length;
    expect(sent).toBe(3);
  });

  it("bounds each attempt by modelTimeoutSeconds and retries it, where standard mode fails the call", async () => {
    fake = await startFakeOpenAi([{ stall: "headers" }, { content: "second try" }]);
    const p = createOpenAiProvider(custom(fake.url), options([], { retryMode: "persistent", timeoutMs: 300, idleTimeoutMs: 60_000 }));
    expect((await p.chat(ask())).content).toBe("second try");
    fake.push({ stall: "headers" }, { content: "unused" });
    const standard = createOpenAiProvider(custom(fake.url), options([], { timeoutMs: 300, idleTimeoutMs: 60_000 }));
    await expect(standard.chat(ask())).rejects.toThrow(/within 0\.3 s \(model timeout\)/);
  });
});

describe("Anthropic and Azure requests", () => {
  let fake: FakeOpenAi | undefined;
  afterEach(async () => fake?.close());
  const cfg = (raw: Record<string, unknown>) => parseConfig(raw, "c.json").config;

  it("nanobot's default config calls Anthropic's OpenAI-compatible endpoint with the bare model id and the key as a bearer token", async () => {
    fake = await startFakeOpenAi([{ content: "hello from claude" }]);
    const r = resolveProvider(cfg({ agents: { defaults: { model: "anthropic/claude-opus-4-5" } }, providers: { anthropic: { apiKey: "sk-ant-x", apiBase: fake.url } } }));
    const reply = await createOpenAiProvider(r, options([])).chat(ask());
    expect(reply.content).toBe("hello from claude");
    expect(reply.model).toBe("anthropic/claude-opus-4-5");
    expect(fake.requests[0]?.body.model).toBe("claude-opus-4-5");
    expect(fake.requests[0]?.headers.authorization).toBe("Bearer sk-ant-x");
  });

  it("Azure: the deployment in the path, the api-version in the query, the key in api-key, max_completion_tokens", async () => {
    fake = await startFakeOpenAi([{ content: "hello from azure" }, { content: "again" }]);
    const endpoint = fake.url.replace(/\/v1$/, "/");
    const r = resolveProvider(cfg({ agents: { defaults: { provider: "azure_openai", model: "gpt-4o-prod" } }, providers: { azureOpenai: { apiKey: "az-key", apiBase: endpoint } } }));
    for (const stream of [false, true]) expect((await createOpenAiProvider(r, options([], { stream })).chat(ask())).content).toMatch(/hello from azure|again/);
    const [first] = fake.requests;
    expect(first?.url).toBe("/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21");
    expect(first?.headers["api-key"]).toBe("az-key");
    expect(first?.body).toMatchObject({ max_completion_tokens: 100 });
    expect(first?.body).not.toHaveProperty("max_tokens");
  });
});

describe("fallback models", () => {
  const fakeProvider = (name: string, outcome: string | Error, calls: string[]): LlmProvider => ({
    name,
    model: "m",
    chat: async () => {
      calls.push(name);
      if (outcome instanceof Error) throw outcome;
      return { content: outcome, toolCalls: [], finishReason: "stop", usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 }, model: `${name}/m` };
    },
  });

  it("reads nanobot's forms: a preset name, a model name, an inline entry (snake_case too) with unset settings from agents.defaults", () => {
    const config = parseConfig(
      {
        agents: { defaults: { model: "gpt-4o", maxTokens: 1000, temperature: 0.3, fallbackModels: ["backup", "deepseek-chat", { model: "glm-4.6", provider: "zhipu", max_tokens: 50 }] } },
        modelPresets: { backup: { model: "claude-sonnet-4-5", provider: "anthropic", maxTokens: 4000 } },
      },
      "c.json",
    ).config;
    expect(fallbackChoices(config)).toEqual([
      { model: "claude-sonnet-4-5", provider: "anthropic", maxTokens: 4000, temperature: 0.1, reasoningEffort: null },
      { model: "deepseek-chat", provider: "auto", maxTokens: 1000, temperature: 0.3, reasoningEffort: null },
      { model: "glm-4.6", provider: "zhipu", maxTokens: 50, temperature: 0.3, reasoningEffort: null },
    ]);
  });

  it("tries each in order after a failure for good, skipping one that cannot be built, and tells who takes over", async () => {
    const calls: string[] = [];
    const switched: string[] = [];
    const p = withFallbacks(fakeProvider("a", new ModelCallError("model call to a failed: HTTP 400"), calls), [
      { label: "b", create: () => fakeProvider("b", new ModelCallError("model call to b failed: HTTP 500"), calls) },
      { label: "unset", create: () => { throw new ProviderNotConfiguredError("providers.zhipu.apiKey is not set"); } },
      { label: "d", create: () => fakeProvider("d", "answer from d", calls) },
    ]);
    const r = await p.chat({ ...ask(), onFallback: (f) => switched.push(`${f.from} -> ${f.to}: ${f.error}`) });
    expect([r.content, r.model]).toEqual(["answer from d", "d/m"]);
    expect(calls).toEqual(["a", "b", "d"]);
    expect(switched).toEqual([
      "a/m -> b/m: model call to a failed: HTTP 400",
      "b/m -> d/m: fallback unset cannot be used: providers.zhipu.apiKey is not set",
    ]);
  });

  it("says what each model said when all fail, and never passes on a cancelled call", async () => {
    const calls: string[] = [];
    const all = withFallbacks(fakeProvider("a", new ModelCallError("a: HTTP 400"), calls), [{ label: "b", create: () => fakeProvider("b", new ModelCallError("b: HTTP 401"), calls) }]);
    await expect(all.chat(ask())).rejects.toThrow("every model failed (2 tried in order): a: HTTP 400; then b: HTTP 401");
    const stop = new AbortController();
    stop.abort(new Error("stopped"));
    const cancelled = withFallbacks(fakeProvider("a", new Error("stopped"), calls), [{ label: "b", create: () => fakeProvider("b", "no", calls) }]);
    calls.length = 0;
    await expect(cancelled.chat(ask(stop.signal))).rejects.toThrow("stopped");
    expect(calls).toEqual(["a"]);
  });
});
