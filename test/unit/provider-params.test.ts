import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/index.js";
import { createOpenAiProvider } from "../../src/providers/client.js";
import { resolveProvider } from "../../src/providers/registry.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";

/**
 * The generation fields each provider and model get in the request body, as nanobot's
 * OpenAICompatProvider._build_kwargs builds them (tests/providers/test_litellm_kwargs.py), seen
 * at the fake endpoint.
 */
let fake: FakeOpenAi;
beforeAll(async () => {
  fake = await startFakeOpenAi([], () => ({ content: "ok" }));
});
afterAll(async () => fake.close());

interface Call {
  maxTokens?: number;
  temperature?: number;
  reasoningEffort?: string | null;
  entry?: Record<string, unknown>;
}

/** The body of one request to `provider` (configured against the fake) for `model`. */
async function bodyFor(provider: string, model: string, call: Call = {}): Promise<Record<string, unknown>> {
  const raw = { agents: { defaults: { provider, model } }, providers: { [provider]: { apiKey: "k", apiBase: fake.url, ...call.entry } } };
  const parsed = parseConfig(raw, "c.json");
  const resolved = resolveProvider(parsed.config, "c.json");
  const p = createOpenAiProvider(resolved, { maxTokens: call.maxTokens ?? 1024, temperature: call.temperature ?? 0.7, reasoningEffort: call.reasoningEffort ?? null, stream: false });
  const before = fake.requests.length;
  await p.chat({ messages: [{ role: "user", content: "hi" }], tools: [] });
  expect(fake.requests).toHaveLength(before + 1);
  return fake.requests[before]!.body as unknown as Record<string, unknown>;
}

describe("max_completion_tokens and temperature for gpt-5 and o-series models", () => {
  it("gpt-5-chat on OpenAI: max_completion_tokens, no max_tokens, no temperature (test_openai_compat_build_kwargs_uses_gpt5_safe_parameters)", async () => {
    const body = await bodyFor("openai", "gpt-5-chat", { maxTokens: 4096, temperature: 0.7 });
    expect(body.model).toBe("gpt-5-chat");
    expect(body.max_completion_tokens).toBe(4096);
    expect(body).not.toHaveProperty("max_tokens");
    expect(body).not.toHaveProperty("temperature");
  });

  it.each([
    ["gpt-5.4", "max_completion_tokens"],
    ["o1-mini", "max_completion_tokens"],
    ["o3-mini", "max_completion_tokens"],
    ["o4-mini", "max_completion_tokens"],
    ["gpt-4", "max_tokens"],
    ["foo3-mini", "max_tokens"],
    ["foo4-mini", "max_tokens"],
  ])("a custom endpoint's %s gets %s (test_openai_compat_build_kwargs_max_completion_tokens_by_model_name)", async (model, key) => {
    const body = await bodyFor("custom", model, { maxTokens: 2048 });
    const other = key === "max_tokens" ? "max_completion_tokens" : "max_tokens";
    expect(body[key]).toBe(2048);
    expect(body).not.toHaveProperty(other);
  });

  it.each([
    ["gpt-4o", null, true],
    ["gpt-5-chat", null, false],
    ["o3-mini", null, false],
    ["gpt-4o", "medium", false],
    ["gpt-4o", "none", true],
  ])("%s with reasoning effort %s: temperature sent = %s (test_openai_compat_supports_temperature_matches_reasoning_model_rules)", async (model, effort, sent) => {
    const body = await bodyFor("custom", model, { temperature: 0.3, reasoningEffort: effort });
    if (sent) expect(body.temperature).toBe(0.3);
    else expect(body).not.toHaveProperty("temperature");
  });

  it.each(["low", "medium", "high", "minimal"])("o3-mini never gets a temperature, reasoning effort %s", async (effort) => {
    expect(await bodyFor("custom", "o3-mini", { reasoningEffort: effort })).not.toHaveProperty("temperature");
  });

  it.each(["volcengine", "volcengine_coding_plan"])("%s takes max_completion_tokens for any model (test_volcengine_uses_max_completion_tokens)", async (provider) => {
    const body = await bodyFor(provider, "doubao-seed-2-0-pro");
    expect(body.max_completion_tokens).toBe(1024);
    expect(body).not.toHaveProperty("max_tokens");
  });

  it("kimi-k3 on Moonshot: no temperature, max_completion_tokens (test_kimi_k3_uses_native_defaults)", async () => {
    const body = await bodyFor("moonshot", "kimi-k3");
    expect(body).not.toHaveProperty("temperature");
    expect(body).not.toHaveProperty("max_tokens");
    expect(body.max_completion_tokens).toBe(1024);
    expect(body).not.toHaveProperty("reasoning_effort");
  });

  it.each([
    ["kimi-k2.5", null],
    ["kimi-k2.6", "high"],
    ["kimi-k2.6", "none"],
  ])("Moonshot's %s chooses its own temperature (effort %s): none sent (test_moonshot_kimi_k25_k26_omit_temperature)", async (model, effort) => {
    expect(await bodyFor("moonshot", model, { reasoningEffort: effort })).not.toHaveProperty("temperature");
  });

  it("Moonshot's kimi-k2.7-code gets temperature 1.0 (test_moonshot_kimi_k27_code_temperature_override)", async () => {
    expect((await bodyFor("moonshot", "kimi-k2.7-code", { temperature: 0.2 })).temperature).toBe(1);
  });

  it("a plain model keeps max_tokens and the configured temperature", async () => {
    const body = await bodyFor("custom", "llama-3.3-70b", { temperature: 0.2 });
    expect(body.max_tokens).toBe(1024);
    expect(body.temperature).toBe(0.2);
  });
});
