import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/index.js";
import { chatEndpoint, modelToSend, PROVIDERS, providerSpec, resolveProvider } from "../../src/providers/registry.js";

/** A config as nanobot users write it (camelCase or snake_case, provider entries named either way). */
const cfg = (raw: Record<string, unknown>) => parseConfig(raw, "/h/config.json").config;
const auto = (model: string, providers: Record<string, unknown>, provider = "auto") => cfg({ agents: { defaults: { model, provider } }, providers });
const route = (raw: Parameters<typeof auto>) => {
  const r = resolveProvider(auto(...raw), "/h/config.json");
  return [r.spec.name, r.apiBase, r.model];
};

describe("nanobot's default config", () => {
  // nanobot/config/schema.py: AgentDefaults.model = "anthropic/claude-opus-4-5"; its onboard writes every provider with an empty key.
  it("works with only providers.anthropic.apiKey: Anthropic's OpenAI-compatible endpoint, the model without its prefix", () => {
    expect(route(["anthropic/claude-opus-4-5", { anthropic: { apiKey: "sk-ant-1" } }])).toEqual(["anthropic", "https://api.anthropic.com/v1/", "claude-opus-4-5"]);
  });

  it("works as nanobot's onboard writes it, every provider listed with an empty key", () => {
    const empty = { apiKey: "", apiBase: null, extraHeaders: null };
    const providers = Object.fromEntries(["custom", "azureOpenai", "bedrock", "openai", "openrouter", "deepseek", "groq", "ollama", "minimaxAnthropic"].map((n) => [n, empty]));
    expect(route(["anthropic/claude-opus-4-5", { ...providers, anthropic: { ...empty, apiKey: "sk-ant-1" } }])).toEqual([
      "anthropic",
      "https://api.anthropic.com/v1/",
      "claude-opus-4-5",
    ]);
  });

  it("works with no model configured (nanobot's default model applies, not troupe's OpenAI one)", () => {
    const r = resolveProvider(cfg({ providers: { anthropic: { apiKey: "sk-ant-1" } } }));
    expect([r.spec.name, r.model]).toEqual(["anthropic", "claude-opus-4-5"]);
    // A model the user named is sent as named; an OpenAI key keeps troupe's default.
    expect(resolveProvider(cfg({ agents: { defaults: { model: "claude-3-5-haiku-latest" } }, providers: { anthropic: { apiKey: "k" } } })).model).toBe("claude-3-5-haiku-latest");
    expect(resolveProvider(cfg({ providers: { openai: { apiKey: "k" }, anthropic: { apiKey: "k" } } })).model).toBe("gpt-4o-mini");
  });

  it("maps OpenRouter-style dotted Claude names to Anthropic's ids, and keeps them for a gateway", () => {
    expect(route(["anthropic/claude-haiku-4.5", { anthropic: { apiKey: "k" } }])[2]).toBe("claude-haiku-4-5");
    expect(route(["claude-sonnet-4-6", { anthropic: { apiKey: "k" } }, "anthropic"])[2]).toBe("claude-sonnet-4-6");
    expect(route(["anthropic/claude-haiku-4.5", { openrouter: { apiKey: "sk-or-v1-x" } }])).toEqual(["openrouter", "https://openrouter.ai/api/v1", "anthropic/claude-haiku-4.5"]);
  });

  it("names the key to set when it cannot be routed", () => {
    const fail = (providers: Record<string, unknown>) => () => resolveProvider(auto("anthropic/claude-opus-4-5", providers), "/h/config.json");
    expect(fail({})).toThrow(
      'no LLM provider configured for model "anthropic/claude-opus-4-5" (Anthropic\'s): set providers.anthropic.apiKey in /h/config.json, or export TROUPE_PROVIDERS__ANTHROPIC__API_KEY (a gateway\'s key, such as providers.openrouter.apiKey, serves it too)',
    );
    expect(fail({ anthropic: { apiKey: "" } })).toThrow(/set providers\.anthropic\.apiKey/);
    // An OpenAI key cannot serve Claude: saying "set providers.openai.apiKey" or sending it there would both mislead.
    expect(fail({ openai: { apiKey: "sk-1" } })).toThrow(
      'model "anthropic/claude-opus-4-5" is Anthropic\'s, but providers.anthropic.apiKey is not set (providers.openai cannot serve it): set it, or export TROUPE_PROVIDERS__ANTHROPIC__API_KEY, or use a gateway such as providers.openrouter',
    );
    expect(() => resolveProvider(auto("claude-opus-4-5", {}))).toThrow(/set providers\.anthropic\.apiKey/);
    expect(() => resolveProvider(auto("deepseek-chat", {}))).toThrow(/set providers\.deepseek\.apiKey/);
    expect(() => resolveProvider(auto("some-model", {}))).toThrow(/^no LLM provider configured: set providers\.openai\.apiKey/);
  });
});

describe("provider matching (nanobot's tests/cli/test_commands.py and tests/providers cases)", () => {
  it.each<[string, Parameters<typeof auto>, string, string, string]>([
    ["explicit ollama prefix without a key", ["ollama/llama3.2", {}], "ollama", "http://localhost:11434/v1", "llama3.2"],
    ["explicit ollama provider, default localhost base", ["llama3.2", {}, "ollama"], "ollama", "http://localhost:11434/v1", "llama3.2"],
    ["camelCase provider name for the coding plan", ["doubao-1-5-pro", { volcengineCodingPlan: { apiKey: "k" } }, "volcengineCodingPlan"], "volcengine_coding_plan", "https://ark.cn-beijing.volces.com/api/coding/v3", "doubao-1-5-pro"],
    ["LM Studio without a key", ["local-model", { lmStudio: { apiKey: null } }, "lm_studio"], "lm_studio", "http://localhost:1234/v1", "local-model"],
    ["Atomic Chat without a key", ["local-model", { atomicChat: { apiKey: null } }, "atomic_chat"], "atomic_chat", "http://localhost:1337/v1", "local-model"],
    ["explicit longcat", ["LongCat-Flash-Chat", { longcat: { apiKey: "k" } }, "longcat"], "longcat", "https://api.longcat.chat/openai/v1", "LongCat-Flash-Chat"],
    ["longcat by prefix", ["longcat/LongCat-Flash-Chat", { longcat: { apiKey: "k" } }], "longcat", "https://api.longcat.chat/openai/v1", "LongCat-Flash-Chat"],
    ["xiaomi mimo by keyword, not minimax", ["mimo/MiniMax-M1-80k", { xiaomiMimo: { apiKey: "k" } }], "xiaomi_mimo", "https://api.xiaomimimo.com/v1", "mimo/MiniMax-M1-80k"],
    ["ollama from its local apiBase", ["llama3.2", { ollama: { apiBase: "http://localhost:11434/v1" } }], "ollama", "http://localhost:11434/v1", "llama3.2"],
    ["ollama over vllm when both are configured", ["llama3.2", { vllm: { apiBase: "http://localhost:8000" }, ollama: { apiBase: "http://localhost:11434/v1" } }], "ollama", "http://localhost:11434/v1", "llama3.2"],
    ["vllm when ollama is not configured", ["llama3.2", { vllm: { apiBase: "http://localhost:8000" } }], "vllm", "http://localhost:8000", "llama3.2"],
    ["cloud nemotron is not taken by an unconfigured ollama", ["nvidia/nemotron-3-super-120b-a12b", { openrouter: { apiKey: "sk-or-test" } }], "openrouter", "https://openrouter.ai/api/v1", "nvidia/nemotron-3-super-120b-a12b"],
    ["bare nemotron goes to a configured ollama", ["nemotron-3-nano", { ollama: { apiBase: "http://localhost:11434/v1" } }], "ollama", "http://localhost:11434/v1", "nemotron-3-nano"],
    ["cloud nemotron is not taken by a configured ollama", ["nvidia/nemotron-3-super-120b-a12b", { ollama: { apiBase: "http://localhost:11434/v1" }, openrouter: { apiKey: "sk-or-test" } }], "openrouter", "https://openrouter.ai/api/v1", "nvidia/nemotron-3-super-120b-a12b"],
    ["custom provider as the last resort", ["unmatched-model", { "my-company-api": { apiBase: "https://example.test/v1" } }], "my-company-api", "https://example.test/v1", "unmatched-model"],
    ["custom provider named by a camelCase prefix", ["companyProxy/gpt-4o-mini", { otherProxy: { apiBase: "https://other.example.test/v1" }, companyProxy: { apiBase: "https://company.example.test/v1" } }], "companyProxy", "https://company.example.test/v1", "gpt-4o-mini"],
    ["deepseek prefix", ["deepseek/deepseek-chat", { deepseek: { apiKey: "k" } }], "deepseek", "https://api.deepseek.com/v1", "deepseek-chat"],
    ["gemini keyword", ["gemini-2.5-flash", { gemini: { apiKey: "AIza" } }], "gemini", "https://generativelanguage.googleapis.com/v1beta/openai", "gemini-2.5-flash"],
    ["ant ling keyword", ["Ling-2.6-flash", { antLing: { apiKey: "k" } }], "ant_ling", "https://api.ant-ling.com/v1", "Ling-2.6-flash"],
    ["orcarouter for another vendor's model", ["deepseek/deepseek-chat", { orcarouter: { apiKey: "sk-orca-1" } }], "orcarouter", "https://api.orcarouter.ai/v1", "deepseek/deepseek-chat"],
    ["modelscope strips its own prefix", ["modelscope/Qwen/Qwen3.5-35B-A3B", { modelscope: { apiKey: "k" } }], "modelscope", "https://api-inference.modelscope.cn/v1", "Qwen/Qwen3.5-35B-A3B"],
    ["modelscope gateway for a Qwen org model", ["Qwen/Qwen3.5-35B-A3B", { modelscope: { apiKey: "k" } }], "modelscope", "https://api-inference.modelscope.cn/v1", "Qwen/Qwen3.5-35B-A3B"],
    ["aihubmix drops the vendor prefix", ["anthropic/claude-3", { aihubmix: { apiKey: "k" } }], "aihubmix", "https://aihubmix.com/v1", "claude-3"],
    ["siliconflow keeps the org prefix", ["Qwen/Qwen2.5-7B-Instruct", { siliconflow: { apiKey: "k" } }], "siliconflow", "https://api.siliconflow.cn/v1", "Qwen/Qwen2.5-7B-Instruct"],
    ["custom endpoint without a key as the last resort", ["meta-llama/llama-3.3-70b-instruct:free", { custom: { apiKey: "", apiBase: "https://example.test/v1" } }], "custom", "https://example.test/v1", "meta-llama/llama-3.3-70b-instruct:free"],
    ["custom prefix is removed", ["custom/minimaxai/minimax-m2.1", { custom: { apiKey: "k", apiBase: "http://10.0.0.2:8000/v1" } }], "custom", "http://10.0.0.2:8000/v1", "minimaxai/minimax-m2.1"],
    ["a custom endpoint for a GLM model (a keyword of an unconfigured vendor)", ["glm-5", { custom: { apiKey: "k", apiBase: "https://example.test/v1" } }], "custom", "https://example.test/v1", "glm-5"],
  ])("%s", (_name, args, name, base, model) => {
    expect(route(args)).toEqual([name, base, model]);
  });

  it.each(["mistral-large-latest", "magistral-medium-latest", "ministral-8b-latest", "codestral-latest", "devstral-medium-latest"])("mistral keyword: %s", (model) => {
    expect(route([model, { openai: { apiKey: "sk-1" }, mistral: { apiKey: "k" } }])[0]).toBe("mistral");
  });

  it("detects a gateway by its key prefix or apiBase, whatever entry holds it", () => {
    const r = resolveProvider(auto("anthropic/claude-sonnet-4", { openai: { apiKey: "sk-or-v1-abc" } }));
    expect([r.spec.name, r.apiBase, r.model, r.configKey]).toEqual(["openrouter", "https://openrouter.ai/api/v1", "anthropic/claude-sonnet-4", "openai"]);
    const h = resolveProvider(auto("meta-llama/Llama-3.3-70B-Instruct", { openai: { apiKey: "hf_abc" } }));
    expect([h.spec.name, h.apiBase]).toEqual(["huggingface", "https://router.huggingface.co/v1"]);
    const b = resolveProvider(auto("some-model", { deepseek: { apiKey: "k", apiBase: "https://aihubmix.com/v1" } }));
    expect([b.spec.name, b.apiBase]).toEqual(["aihubmix", "https://aihubmix.com/v1"]);
  });

  it("reads provider entries however they are spelt (azure_openai, azureOpenai)", () => {
    for (const name of ["azure_openai", "azureOpenai", "azure-openai"]) {
      const r = resolveProvider(auto("my-deployment", { [name]: { apiKey: "k", apiBase: "https://res.openai.azure.com" } }, "azure_openai"));
      expect([r.spec.name, r.apiBase, r.model, r.apiVersion]).toEqual(["azure_openai", "https://res.openai.azure.com", "my-deployment", "2024-10-21"]);
    }
  });
});

describe("Azure OpenAI", () => {
  it("takes the endpoint, the deployment (the model) and api_version as nanobot users write them", () => {
    const r = resolveProvider(
      cfg({ agents: { defaults: { provider: "azure_openai", model: "gpt-5.1-1113" } }, providers: { azure_openai: { api_key: "k", api_base: "http://pub1.example.cn:43265/", api_version: "2024-12-01-preview" } } }),
    );
    expect([r.spec.backend, r.apiBase, r.model, r.apiVersion]).toEqual(["azure", "http://pub1.example.cn:43265/", "gpt-5.1-1113", "2024-12-01-preview"]);
    expect(chatEndpoint(r)).toEqual({
      url: "http://pub1.example.cn:43265/openai/deployments/gpt-5.1-1113/chat/completions?api-version=2024-12-01-preview",
      headers: { "api-key": "k" },
      body: {},
    });
  });

  it("takes an endpoint copied with its /openai/v1 path as the resource endpoint", () => {
    for (const base of ["https://res.openai.azure.com/openai/v1", "https://res.openai.azure.com/openai/", "https://res.openai.azure.com/"]) {
      const r = resolveProvider(auto("dep", { azure_openai: { apiKey: "k", apiBase: base } }, "azure_openai"));
      expect(chatEndpoint(r).url).toBe("https://res.openai.azure.com/openai/deployments/dep/chat/completions?api-version=2024-10-21");
    }
  });

  it("is found by the keyword azure, and says what is missing", () => {
    expect(() => resolveProvider(auto("azure/gpt-4o", {}))).toThrow("providers.azure_openai.apiBase is not set: give your Azure OpenAI endpoint (https://<resource>.openai.azure.com) in config.json");
    expect(() => resolveProvider(auto("gpt-4o", { azureOpenai: { apiBase: "https://r.openai.azure.com" } }, "azure_openai"))).toThrow(
      "providers.azureOpenai.apiKey is not set: add it to config.json or export TROUPE_PROVIDERS__AZURE_OPENAI__API_KEY",
    );
  });
});

describe("the vendors nanobot names", () => {
  // nanobot/providers/registry.py default_api_base of each (troupe keeps /v1 for DeepSeek and no trailing slash for Gemini: both are served there).
  it.each([
    ["minimax", "https://api.minimax.io/v1"],
    ["mistral", "https://api.mistral.ai/v1"],
    ["stepfun", "https://api.stepfun.com/v1"],
    ["siliconflow", "https://api.siliconflow.cn/v1"],
    ["volcengine", "https://ark.cn-beijing.volces.com/api/v3"],
    ["qianfan", "https://qianfan.baidubce.com/v2"],
    ["aihubmix", "https://aihubmix.com/v1"],
    ["dashscope", "https://dashscope.aliyuncs.com/compatible-mode/v1"],
    ["moonshot", "https://api.moonshot.ai/v1"],
    ["zhipu", "https://open.bigmodel.cn/api/paas/v4"],
    ["deepseek", "https://api.deepseek.com/v1"],
    ["gemini", "https://generativelanguage.googleapis.com/v1beta/openai"],
    ["groq", "https://api.groq.com/openai/v1"],
    ["openrouter", "https://openrouter.ai/api/v1"],
    ["nvidia", "https://integrate.api.nvidia.com/v1"],
    ["byteplus", "https://ark.ap-southeast.bytepluses.com/api/v3"],
    ["novita", "https://api.novita.ai/openai"],
    ["huggingface", "https://router.huggingface.co/v1"],
    ["anthropic", "https://api.anthropic.com/v1/"],
    ["openai", "https://api.openai.com/v1"],
  ])("%s at %s, chosen by name with just a key", (name, base) => {
    const r = resolveProvider(auto("some-model", { [name]: { apiKey: "k" } }, name));
    expect([r.spec.name, r.apiBase]).toEqual([name, base]);
  });

  it.each([
    ["minimax", "MiniMax-M2.7"],
    ["stepfun", "step-3"],
    ["qianfan", "ernie-4.5-turbo"],
    ["moonshot", "kimi-k2.5"],
    ["dashscope", "qwen3-max"],
    ["zhipu", "glm-4.6"],
    ["volcengine", "volcengine/doubao-seed"],
  ])("%s is found from the model name %s", (name, model) => {
    expect(route([model, { openai: { apiKey: "sk-1" }, [name]: { apiKey: "k" } }])[0]).toBe(name);
  });

  it("refuses the providers that need another API, saying what to use", () => {
    expect(() => resolveProvider(auto("anthropic.claude-3", { bedrock: { apiKey: "k" } }, "bedrock"))).toThrow(/^providers\.bedrock: AWS Bedrock needs its Converse API/);
    expect(() => resolveProvider(auto("github-copilot/gpt-4.1", {}))).toThrow(/^providers\.github_copilot: GitHub Copilot signs in with OAuth/);
    expect(() => resolveProvider(auto("x", { minimaxAnthropic: { apiKey: "k" } }, "minimaxAnthropic"))).toThrow(/Anthropic Messages API.*providers\.minimax/);
  });

  it("every vendor with a default base is named once and sends the names it is given", () => {
    const names = PROVIDERS.map((p) => p.name);
    expect(new Set(names).size).toBe(names.length);
    expect(providerSpec("volcengine-coding-plan")?.name).toBe("volcengine_coding_plan");
    expect(modelToSend(providerSpec("openrouter")!, "openrouter/auto")).toBe("openrouter/auto");
    expect(modelToSend(providerSpec("opencode")!, "opencode/qwen3-coder")).toBe("qwen3-coder");
  });
});
