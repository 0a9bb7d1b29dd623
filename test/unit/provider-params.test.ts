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
  /** The request's own temperature (spawn's, for a subagent). */
  requestTemperature?: number;
}

/** The body of one request to `provider` (configured against the fake) for `model`. */
async function bodyFor(provider: string, model: string, call: Call = {}): Promise<Record<string, unknown>> {
  const raw = { agents: { defaults: { provider, model } }, providers: { [provider]: { apiKey: "k", apiBase: fake.url, ...call.entry } } };
  const parsed = parseConfig(raw, "c.json");
  const resolved = resolveProvider(parsed.config, "c.json");
  const p = createOpenAiProvider(resolved, { maxTokens: call.maxTokens ?? 1024, temperature: call.temperature ?? 0.7, reasoningEffort: call.reasoningEffort ?? null, stream: false });
  const before = fake.requests.length;
  await p.chat({ messages: [{ role: "user", content: "hi" }], tools: [], temperature: call.requestTemperature });
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

/** The body's fields beyond the standard chat-completions ones: what nanobot sends as extra_body. */
const STANDARD = new Set(["model", "messages", "max_tokens", "max_completion_tokens", "temperature", "tool_choice", "tools", "reasoning_effort", "stream", "stream_options"]);
const extraOf = (body: Record<string, unknown>) => Object.fromEntries(Object.entries(body).filter(([k]) => !STANDARD.has(k)));

describe("providers' own thinking switches (nanobot's thinking_style)", () => {
  const on = { thinking: { type: "enabled" } };
  const off = { thinking: { type: "disabled" } };
  it.each([
    // [provider, model, reasoningEffort, extra fields, reasoning_effort sent (undefined: none)]
    ["dashscope", "qwen3-plus", "medium", { enable_thinking: true }, "medium"], // test_dashscope_thinking_enabled_with_reasoning_effort
    ["dashscope", "qwen3-plus", "minimal", { enable_thinking: false }, "minimum"], // test_dashscope_thinking_disabled_for_minimal
    ["dashscope", "qwen3-plus", "minimum", { enable_thinking: false }, "minimum"], // test_dashscope_thinking_disabled_for_minimum_alias
    ["openai", "gpt-5", "minimal", {}, "minimal"], // test_non_dashscope_minimal_not_retranslated
    ["dashscope", "qwen-turbo", null, {}, undefined], // test_dashscope_no_extra_body_when_reasoning_effort_none
    ["dashscope", "qwen3.6-plus", "none", { enable_thinking: false }, undefined], // test_dashscope_thinking_disabled_for_none_string
    ["minimax", "MiniMax-M2.7", "medium", { reasoning_split: true }, "medium"], // test_minimax_reasoning_split_enabled_with_reasoning_effort
    ["minimax", "MiniMax-M2.7", "minimal", { reasoning_split: false }, "minimal"], // test_minimax_reasoning_split_disabled_for_minimal
    ["minimax", "MiniMax-M2.7", null, {}, undefined], // test_minimax_no_extra_body_when_reasoning_effort_none
    ["volcengine", "doubao-seed-2-0-pro", "high", on, "high"], // test_volcengine_thinking_enabled
    ["byteplus", "doubao-seed-2-0-pro", "minimal", off, "minimal"], // test_byteplus_thinking_disabled_for_minimal
    ["byteplus", "doubao-seed-2-0-pro", null, {}, undefined], // test_byteplus_no_extra_body_when_reasoning_effort_none
    ["deepseek", "deepseek-v4-pro", "high", on, "high"], // test_deepseek_thinking_enabled
    ["deepseek", "deepseek-v4-pro", "minimal", off, "minimal"], // test_deepseek_thinking_disabled_for_minimal
    ["deepseek", "deepseek-chat", null, {}, undefined], // test_deepseek_no_extra_body_when_reasoning_effort_none
    ["deepseek", "deepseek-v4-pro", "none", off, undefined], // test_deepseek_thinking_disabled_for_none_string
    ["openai", "gpt-4o", "medium", {}, "medium"], // test_openai_no_thinking_extra_body
    ["moonshot", "kimi-k2.5", "medium", on, undefined], // test_kimi_k25_thinking_enabled (Moonshot refuses both)
    ["moonshot", "kimi-k2.5", "minimal", off, undefined], // test_kimi_k25_thinking_disabled_for_minimal
    ["moonshot", "kimi-k2.5", null, {}, undefined], // test_kimi_k25_no_extra_body_when_reasoning_effort_none
    ["moonshot", "kimi-k2.5", "none", off, undefined], // test_kimi_k25_thinking_disabled_for_none_string
    ["moonshot", "kimi-k3", "max", {}, "max"], // test_kimi_k3_uses_top_level_max_reasoning_effort
    ["moonshot", "kimi-k3", "high", {}, "max"], // test_kimi_k3_normalizes_legacy_enabled_reasoning_effort
    ["moonshot", "kimi-k3", "none", {}, undefined], // test_kimi_k3_omits_disabled_reasoning_effort
    ["moonshot", "kimi-k2.6", "medium", on, undefined], // test_kimi_k26_thinking_enabled
    ["moonshot", "kimi-k2.7-code", "medium", on, undefined], // test_kimi_k27_code_thinking_enabled
    ["moonshot", "kimi-k2.7-code", "none", {}, undefined], // test_kimi_k27_code_thinking_none_omits_disabled
    ["moonshot", "k2.6-code-preview", "high", on, undefined], // test_kimi_k26_code_preview_thinking_enabled
    ["moonshot", "kimi-k2", "high", {}, "high"], // test_kimi_k2_series_no_thinking_injection
    ["moonshot", "kimi-k2-thinking", "high", {}, "high"], // test_kimi_k2_thinking_series_no_thinking_injection
    ["openrouter", "moonshotai/kimi-k2.5", "medium", { ...on, reasoning: { effort: "medium" } }, undefined], // test_kimi_k25_thinking_enabled_with_openrouter_prefix
    ["openrouter", "moonshotai/kimi-k2.6", "medium", { ...on, reasoning: { effort: "medium" } }, undefined], // test_kimi_k26_thinking_enabled_with_openrouter_prefix
    ["openrouter", "moonshotai/kimi-k2.7-code", "high", { ...on, reasoning: { effort: "high" } }, undefined], // test_kimi_k27_code_thinking_enabled_with_openrouter_prefix
    ["openrouter", "moonshotai/kimi-k2.7-code", "none", {}, undefined], // test_kimi_k27_code_thinking_none_with_openrouter_prefix_omits_disabled
    ["openrouter", "moonshotai/kimi-k2.5", null, {}, undefined], // test_kimi_k25_thinking_disabled_with_openrouter_prefix
    ["openrouter", "qwen/qwen3.6-flash", "medium", { enable_thinking: true, reasoning: { effort: "medium" } }, "medium"], // test_qwen_thinking_enabled_via_model_level_mapping
    ["openrouter", "qwen/qwen3.5-flash", "none", { enable_thinking: false, reasoning: { effort: "none" } }, undefined], // test_qwen_thinking_disabled_via_model_level_mapping
    ["openrouter", "qwen/qwen3.6-flash", null, {}, undefined], // test_qwen_no_extra_body_when_reasoning_effort_omitted
    ["xiaomi_mimo", "mimo-v2.5-pro", "none", off, undefined], // test_xiaomi_mimo_thinking.py test_mimo_reasoning_effort_none_disables_thinking
    ["xiaomi_mimo", "mimo-v2.5-pro", "medium", on, "medium"], // test_mimo_reasoning_effort_medium_enables_thinking
    ["xiaomi_mimo", "mimo-v2.5-pro", "low", on, "low"], // test_mimo_reasoning_effort_low_enables_thinking
    ["xiaomi_mimo", "mimo-v2.5-pro", null, {}, undefined], // test_mimo_reasoning_effort_unset_preserves_provider_default
    ["openrouter", "xiaomi/mimo-v2.5-pro", "none", { ...off, reasoning: { effort: "none" } }, undefined], // test_mimo_via_openrouter_reasoning_effort_none_disables_thinking
    ["openrouter", "xiaomi/mimo-v2.5-pro", "medium", { ...on, reasoning: { effort: "medium" } }, "medium"], // test_mimo_via_openrouter_reasoning_effort_medium_enables_thinking
    ["openrouter", "mimo-v2.5-pro", "none", { ...off, reasoning: { effort: "none" } }, undefined], // test_mimo_via_openrouter_bare_slug_also_matches
  ] as const)("%s %s, reasoning effort %s: %j, reasoning_effort %s", async (provider, model, effort, extra, wireEffort) => {
    const body = await bodyFor(provider, model, { reasoningEffort: effort });
    expect(extraOf(body)).toEqual(extra);
    expect(body.reasoning_effort).toBe(wireEffort);
  });

  it.each(["thinking_type", "enable_thinking", "reasoning_split"] as const)("providers.custom.thinkingStyle %s switches thinking for a custom endpoint (test_custom_thinking_style.py)", async (style) => {
    const expected = { thinking_type: [on, off], enable_thinking: [{ enable_thinking: true }, { enable_thinking: false }], reasoning_split: [{ reasoning_split: true }, { reasoning_split: false }] }[style];
    expect(extraOf(await bodyFor("custom", "my-model", { reasoningEffort: "high", entry: { thinkingStyle: style } }))).toEqual(expected[0]);
    expect(extraOf(await bodyFor("custom", "my-model", { reasoningEffort: "minimal", entry: { thinking_style: style } }))).toEqual(expected[1]);
    expect(extraOf(await bodyFor("custom", "my-model", { reasoningEffort: null, entry: { thinkingStyle: style } }))).toEqual({});
  });

  it("a provider the user defines takes its thinkingStyle too; none set (or empty) sends none", async () => {
    expect(extraOf(await bodyFor("tenant", "tenant-model", { reasoningEffort: "high", entry: { thinkingStyle: "thinking_type" } }))).toEqual(on);
    expect(extraOf(await bodyFor("tenant", "tenant-model", { reasoningEffort: "high", entry: { thinkingStyle: "" } }))).toEqual({});
    expect(extraOf(await bodyFor("custom", "my-model", { reasoningEffort: "high" }))).toEqual({});
  });

  it("an unknown thinkingStyle is refused, naming the valid ones (test_invalid_thinking_style_raises_with_clear_message)", () => {
    const raw = { providers: { custom: { apiBase: "http://127.0.0.1:1/v1", thinkingStyle: "thinking_typ" } } };
    expect(() => parseConfig(raw, "c.json")).toThrow(/providers\.custom\.thinkingStyle.*"thinking_typ".*thinking_type.*enable_thinking.*reasoning_split/s);
  });
});

describe("providers.*.extraBody and extraQuery (nanobot's test_extra_body_config.py, test_extra_query_config.py)", () => {
  it("no extraBody: no extra fields (test_no_extra_body_no_key)", async () => {
    expect(extraOf(await bodyFor("custom", "test-model"))).toEqual({});
  });

  it.each([
    ["test_extra_body_injected", { chat_template_kwargs: { enable_thinking: false } }],
    ["test_guided_json_injection", { guided_json: { type: "object", properties: { name: { type: "string" } } } }],
    ["test_repetition_penalty_injection", { repetition_penalty: 1.15 }],
  ])("%s: its fields go into the body as written (snake_case kept)", async (_name, extraBody) => {
    const body = await bodyFor("custom", "test-model", { entry: { extraBody } });
    expect(extraOf(body)).toEqual(extraBody);
    // A second call sends the same.
    expect(extraOf(await bodyFor("custom", "test-model", { entry: { extra_body: extraBody } }))).toEqual(extraBody);
  });

  it("merges with the thinking switch, deeply, and wins where both set a field (test_extra_body_merges_with_thinking, TestDeepMerge)", async () => {
    const thinking = { thinkingStyle: "thinking_type" };
    expect(extraOf(await bodyFor("custom", "deepseek-v3", { reasoningEffort: "high", entry: { ...thinking, extraBody: { custom_param: "value" } } }))).toEqual({
      thinking: { type: "enabled" },
      custom_param: "value",
    });
    expect(extraOf(await bodyFor("custom", "m", { reasoningEffort: "high", entry: { ...thinking, extraBody: { thinking: { budget_tokens: 2048 } } } }))).toEqual({
      thinking: { type: "enabled", budget_tokens: 2048 },
    });
    expect(extraOf(await bodyFor("dashscope", "qwen3-plus", { reasoningEffort: "high", entry: { extraBody: { enable_thinking: false } } }))).toEqual({ enable_thinking: false });
    expect(extraOf(await bodyFor("custom", "m", { reasoningEffort: "high", entry: { ...thinking, extraBody: { thinking: "off" } } }))).toEqual({ thinking: "off" });
  });

  it("extraQuery's parameters go on the URL, beside extraHeaders (test_build_client_passes_default_query)", async () => {
    const before = fake.requests.length;
    await bodyFor("custom", "m", { entry: { extraQuery: { "api-version": "v1", tag: "a b" }, extraHeaders: { "X-Tenant": "t1" } } });
    const req = fake.requests[before]!;
    expect(req.url).toBe("/v1/chat/completions?api-version=v1&tag=a+b");
    expect(req.headers["x-tenant"]).toBe("t1");
    await bodyFor("custom", "m");
    expect(fake.requests[before + 1]!.url).toBe("/v1/chat/completions");
  });

  it("Azure keeps its api-version and adds extraQuery's", async () => {
    const raw = { agents: { defaults: { provider: "azure_openai", model: "dep" } }, providers: { azureOpenai: { apiKey: "az", apiBase: fake.url.replace(/\/v1$/, "/"), extraQuery: { trace: "1" } } } };
    const p = createOpenAiProvider(resolveProvider(parseConfig(raw, "c.json").config, "c.json"), { maxTokens: 10, temperature: 0, stream: false });
    const before = fake.requests.length;
    await p.chat({ messages: [{ role: "user", content: "hi" }], tools: [] });
    expect(fake.requests[before]!.url).toBe("/openai/deployments/dep/chat/completions?api-version=2024-10-21&trace=1");
  });

  it("the config takes them without the 'not supported' warning; fields troupe sets itself are refused", () => {
    const ok = parseConfig({ providers: { custom: { apiBase: "http://127.0.0.1:1/v1", extraBody: { top_k: 20 }, extraQuery: { a: "b" } } } }, "c.json");
    expect(ok.warnings.join("\n")).not.toMatch(/extraBody|extraQuery/);
    expect(ok.config.providers.custom?.extraBody).toEqual({ top_k: 20 });
    expect(() => parseConfig({ providers: { custom: { apiBase: "http://127.0.0.1:1/v1", extraBody: { messages: [] } } } }, "c.json")).toThrow(/providers\.custom\.extraBody.*messages.*troupe sets/);
    expect(() => parseConfig({ providers: { custom: { apiBase: "http://127.0.0.1:1/v1", extraQuery: { a: 1 } } } }, "c.json")).toThrow(/providers\.custom\.extraQuery\.a/);
  });
});

describe("a request's own temperature (spawn's temperature for a subagent)", () => {
  it("replaces the configured one for that request (test_spawn_forwards_temperature_to_run_spec)", async () => {
    expect((await bodyFor("custom", "fake-model", { temperature: 0.1, requestTemperature: 0.9 })).temperature).toBe(0.9);
    expect((await bodyFor("custom", "fake-model", { temperature: 0.1 })).temperature).toBe(0.1);
  });

  it("is not sent to a model that takes no temperature", async () => {
    expect(await bodyFor("openai", "gpt-5-chat", { temperature: 0.1, requestTemperature: 0.9 })).not.toHaveProperty("temperature");
  });
});
