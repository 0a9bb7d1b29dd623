import type { ThinkingStyle } from "../config/schema.js";

/**
 * The providers troupe knows, as data: nanobot's registry (nanobot/providers/registry.py), in its
 * order (the order decides ties: custom and Azure first, then gateways, then vendors, then local
 * servers). Every one that speaks the OpenAI chat-completions API is served by the openai SDK;
 * Azure by the SDK's AzureOpenAI; Anthropic through its OpenAI-compatible endpoint. The few that
 * need another API (Bedrock, OAuth logins, Anthropic-format endpoints) are listed so they are
 * refused with a reason instead of being taken for a custom endpoint.
 */
export interface ProviderSpec {
  /** The key under `providers` (nanobot's snake_case name; camelCase and "-" are accepted too). */
  name: string;
  displayName: string;
  defaultApiBase: string | null;
  /** Lowercase substrings of a model name that point to this provider. */
  keywords: string[];
  /** An api key starting with this is this gateway's, whatever provider entry holds it. */
  keyPrefix?: string;
  /** A substring of apiBase that identifies it. */
  baseMarker?: string;
  /** Gateways route many vendors' models and keep the model's "vendor/" prefix. */
  isGateway?: boolean;
  /** Local servers need no api key. */
  isLocal?: boolean;
  /** The user gives the endpoint (custom, Azure): chosen by prefix or keyword without a key. */
  isDirect?: boolean;
  envKey?: string;
  /** Send only the last segment of "vendor/model" (gateways that do not understand vendor prefixes). */
  stripVendorPrefix?: boolean;
  /** Model prefixes, besides the provider's own name, removed before sending. */
  stripPrefixes?: string[];
  /** How requests are made: the OpenAI client (default) or AzureOpenAI (deployment = model, api-version). */
  backend?: "openai" | "azure";
  /** The model name the endpoint expects, from the one configured (prefix already removed). */
  mapModel?: (model: string) => string;
  /** Takes max_completion_tokens, not max_tokens, for every model (nanobot's supports_max_completion_tokens). */
  maxCompletionTokens?: boolean;
  /** How the provider's thinking is switched on and off when a reasoning effort is set (generation.ts). */
  thinkingStyle?: ThinkingStyle;
  /** A gateway that takes its own {"reasoning": {"effort": …}} beside a model's thinking switch (OpenRouter). */
  gatewayReasoning?: boolean;
  /** The model used when the config names none and troupe's default (an OpenAI model) is not this provider's. */
  defaultModel?: string;
  /** Known to nanobot, but needs an API troupe does not speak: why, and what to use instead. */
  unsupported?: string;
}

/** Anthropic's ids use dashes where OpenRouter-style names use dots: claude-sonnet-4.5 → claude-sonnet-4-5. */
export const anthropicModelId = (model: string): string => model.replace(/(\d)\.(\d)/g, "$1-$2");

const anthropicApi = (what: string) => `${what} speaks the Anthropic Messages API, which troupe does not; use its OpenAI-compatible endpoint as a custom provider`;

export const PROVIDERS: ProviderSpec[] = [
  { name: "custom", displayName: "Custom (OpenAI-compatible)", defaultApiBase: null, keywords: [], isDirect: true },
  { name: "azure_openai", displayName: "Azure OpenAI", defaultApiBase: null, keywords: ["azure", "azure-openai"], isDirect: true, backend: "azure" },
  { name: "bedrock", displayName: "AWS Bedrock", defaultApiBase: null, keywords: ["bedrock", "anthropic.claude", "amazon.nova"], unsupported: "AWS Bedrock needs its Converse API and AWS signing, which troupe does not speak; use a gateway (providers.openrouter) or the vendor's own provider" },
  // Gateways: detected by key prefix or apiBase, and they win the fallback.
  { name: "openrouter", displayName: "OpenRouter", defaultApiBase: "https://openrouter.ai/api/v1", keywords: ["openrouter"], keyPrefix: "sk-or-", baseMarker: "openrouter", isGateway: true, gatewayReasoning: true, envKey: "OPENROUTER_API_KEY" },
  { name: "orcarouter", displayName: "OrcaRouter", defaultApiBase: "https://api.orcarouter.ai/v1", keywords: ["orcarouter"], keyPrefix: "sk-orca-", baseMarker: "orcarouter", isGateway: true, envKey: "ORCAROUTER_API_KEY" },
  { name: "edenai", displayName: "Eden AI", defaultApiBase: "https://api.edenai.run/v3", keywords: ["edenai"], baseMarker: "edenai", isGateway: true, envKey: "EDENAI_API_KEY" },
  { name: "opencode", displayName: "OpenCode Zen", defaultApiBase: "https://opencode.ai/zen/v1", keywords: ["opencode/", "opencode", "opencode-zen", "opencode_zen"], baseMarker: "opencode.ai/zen", isGateway: true, stripPrefixes: ["opencode", "opencode_zen"], envKey: "OPENCODE_API_KEY" },
  { name: "opencode_go", displayName: "OpenCode Go", defaultApiBase: "https://opencode.ai/zen/go/v1", keywords: ["opencode-go", "opencode_go"], baseMarker: "opencode.ai/zen/go", isGateway: true, stripPrefixes: ["opencode_go"], envKey: "OPENCODE_API_KEY" },
  { name: "huggingface", displayName: "Hugging Face", defaultApiBase: "https://router.huggingface.co/v1", keywords: ["huggingface", "hugging-face"], keyPrefix: "hf_", baseMarker: "huggingface", isGateway: true, envKey: "HF_TOKEN" },
  { name: "skywork", displayName: "Skywork", defaultApiBase: "https://api.apifree.ai/agent/v1", keywords: ["skywork", "skyclaw", "apifree"], baseMarker: "apifree.ai", isGateway: true, envKey: "SKYWORK_API_KEY" },
  { name: "aihubmix", displayName: "AiHubMix", defaultApiBase: "https://aihubmix.com/v1", keywords: ["aihubmix"], baseMarker: "aihubmix", isGateway: true, stripVendorPrefix: true, envKey: "OPENAI_API_KEY" },
  { name: "siliconflow", displayName: "SiliconFlow", defaultApiBase: "https://api.siliconflow.cn/v1", keywords: ["siliconflow"], baseMarker: "siliconflow", isGateway: true, envKey: "OPENAI_API_KEY" },
  { name: "novita", displayName: "Novita AI", defaultApiBase: "https://api.novita.ai/openai", keywords: ["novita"], baseMarker: "novita", isGateway: true, envKey: "NOVITA_API_KEY" },
  { name: "volcengine", displayName: "VolcEngine", defaultApiBase: "https://ark.cn-beijing.volces.com/api/v3", keywords: ["volcengine", "volces", "ark"], baseMarker: "volces", isGateway: true, maxCompletionTokens: true, thinkingStyle: "thinking_type", envKey: "OPENAI_API_KEY" },
  { name: "volcengine_coding_plan", displayName: "VolcEngine Coding Plan", defaultApiBase: "https://ark.cn-beijing.volces.com/api/coding/v3", keywords: ["volcengine-plan"], isGateway: true, stripVendorPrefix: true, maxCompletionTokens: true, thinkingStyle: "thinking_type", envKey: "OPENAI_API_KEY" },
  { name: "byteplus", displayName: "BytePlus", defaultApiBase: "https://ark.ap-southeast.bytepluses.com/api/v3", keywords: ["byteplus"], baseMarker: "bytepluses", isGateway: true, stripVendorPrefix: true, thinkingStyle: "thinking_type", envKey: "OPENAI_API_KEY" },
  { name: "byteplus_coding_plan", displayName: "BytePlus Coding Plan", defaultApiBase: "https://ark.ap-southeast.bytepluses.com/api/coding/v3", keywords: ["byteplus-plan"], isGateway: true, stripVendorPrefix: true, thinkingStyle: "thinking_type", envKey: "OPENAI_API_KEY" },
  // Vendors: matched by model-name keywords.
  { name: "anthropic", displayName: "Anthropic", defaultApiBase: "https://api.anthropic.com/v1/", keywords: ["anthropic", "claude"], baseMarker: "api.anthropic.com", mapModel: anthropicModelId, defaultModel: "anthropic/claude-opus-4-5", envKey: "ANTHROPIC_API_KEY" },
  { name: "openai", displayName: "OpenAI", defaultApiBase: "https://api.openai.com/v1", keywords: ["openai", "gpt"], baseMarker: "api.openai.com", maxCompletionTokens: true, envKey: "OPENAI_API_KEY" },
  { name: "openai_codex", displayName: "OpenAI Codex", defaultApiBase: null, keywords: ["openai-codex"], unsupported: "OpenAI Codex signs in with a ChatGPT login (OAuth), which troupe does not do; use providers.openai with an API key" },
  { name: "xai_grok", displayName: "xAI Grok", defaultApiBase: null, keywords: ["xai-grok", "xai_grok"], unsupported: "xAI Grok's subscription signs in with OAuth, which troupe does not do; use xAI's OpenAI-compatible API (https://api.x.ai/v1) as a custom provider" },
  { name: "github_copilot", displayName: "GitHub Copilot", defaultApiBase: null, keywords: ["github_copilot", "copilot"], unsupported: "GitHub Copilot signs in with OAuth, which troupe does not do; use another provider's API key" },
  { name: "deepseek", displayName: "DeepSeek", defaultApiBase: "https://api.deepseek.com/v1", keywords: ["deepseek"], baseMarker: "deepseek", thinkingStyle: "thinking_type", envKey: "DEEPSEEK_API_KEY" },
  { name: "gemini", displayName: "Gemini (OpenAI endpoint)", defaultApiBase: "https://generativelanguage.googleapis.com/v1beta/openai", keywords: ["gemini", "gemma"], baseMarker: "generativelanguage", envKey: "GEMINI_API_KEY" },
  { name: "zhipu", displayName: "Zhipu AI", defaultApiBase: "https://open.bigmodel.cn/api/paas/v4", keywords: ["zhipu", "glm", "zai"], baseMarker: "bigmodel", envKey: "ZAI_API_KEY" },
  { name: "dashscope", displayName: "DashScope (Qwen)", defaultApiBase: "https://dashscope.aliyuncs.com/compatible-mode/v1", keywords: ["qwen", "dashscope"], baseMarker: "dashscope", thinkingStyle: "enable_thinking", envKey: "DASHSCOPE_API_KEY" },
  { name: "modelscope", displayName: "ModelScope", defaultApiBase: "https://api-inference.modelscope.cn/v1", keywords: ["modelscope"], baseMarker: "modelscope", isGateway: true, stripPrefixes: ["modelscope"], thinkingStyle: "enable_thinking", envKey: "MODELSCOPE_API_KEY" },
  { name: "moonshot", displayName: "Moonshot", defaultApiBase: "https://api.moonshot.ai/v1", keywords: ["moonshot", "kimi"], baseMarker: "moonshot", envKey: "MOONSHOT_API_KEY" },
  { name: "kimi_coding", displayName: "Kimi Coding", defaultApiBase: null, keywords: ["kimi-coding", "kimi_coding", "kimi-for-coding"], unsupported: anthropicApi("Kimi Coding (api.kimi.com/coding)") },
  { name: "minimax", displayName: "MiniMax", defaultApiBase: "https://api.minimax.io/v1", keywords: ["minimax"], baseMarker: "minimax", thinkingStyle: "reasoning_split", envKey: "MINIMAX_API_KEY" },
  { name: "minimax_anthropic", displayName: "MiniMax (Anthropic)", defaultApiBase: null, keywords: ["minimax_anthropic"], unsupported: `${anthropicApi("MiniMax's Anthropic endpoint")}, or providers.minimax` },
  { name: "mistral", displayName: "Mistral", defaultApiBase: "https://api.mistral.ai/v1", keywords: ["mistral", "magistral", "ministral", "codestral", "devstral"], baseMarker: "mistral.ai", envKey: "MISTRAL_API_KEY" },
  { name: "stepfun", displayName: "Step Fun", defaultApiBase: "https://api.stepfun.com/v1", keywords: ["stepfun", "step"], baseMarker: "stepfun", envKey: "STEPFUN_API_KEY" },
  { name: "xiaomi_mimo", displayName: "Xiaomi MIMO", defaultApiBase: "https://api.xiaomimimo.com/v1", keywords: ["xiaomi_mimo", "mimo"], baseMarker: "xiaomimimo", thinkingStyle: "thinking_type", envKey: "XIAOMIMIMO_API_KEY" },
  { name: "longcat", displayName: "LongCat", defaultApiBase: "https://api.longcat.chat/openai/v1", keywords: ["longcat"], baseMarker: "longcat", envKey: "LONGCAT_API_KEY" },
  { name: "ant_ling", displayName: "Ant Ling", defaultApiBase: "https://api.ant-ling.com/v1", keywords: ["ant_ling", "ant-ling", "ling-", "ring-"], baseMarker: "ant-ling.com", envKey: "ANT_LING_API_KEY" },
  // Local servers: chosen by their config entry (an apiBase), never by a model name alone.
  { name: "vllm", displayName: "vLLM", defaultApiBase: "http://localhost:8000/v1", keywords: ["vllm"], isLocal: true },
  { name: "ollama", displayName: "Ollama", defaultApiBase: "http://localhost:11434/v1", keywords: ["ollama", "nemotron"], baseMarker: "11434", isLocal: true },
  { name: "lm_studio", displayName: "LM Studio", defaultApiBase: "http://localhost:1234/v1", keywords: ["lm-studio", "lmstudio", "lm_studio"], baseMarker: "1234", isLocal: true },
  { name: "atomic_chat", displayName: "Atomic Chat", defaultApiBase: "http://localhost:1337/v1", keywords: ["atomic-chat", "atomic_chat", "atomicchat"], baseMarker: "1337", isLocal: true },
  { name: "ovms", displayName: "OpenVINO Model Server", defaultApiBase: "http://localhost:8000/v3", keywords: ["openvino", "ovms"], isDirect: true, isLocal: true },
  { name: "nvidia", displayName: "NVIDIA NIM", defaultApiBase: "https://integrate.api.nvidia.com/v1", keywords: ["nvidia", "nemotron", "nvapi"], keyPrefix: "nvapi-", baseMarker: "nvidia.com", envKey: "NVIDIA_NIM_API_KEY" },
  { name: "groq", displayName: "Groq", defaultApiBase: "https://api.groq.com/openai/v1", keywords: ["groq"], keyPrefix: "gsk_", baseMarker: "groq", envKey: "GROQ_API_KEY" },
  { name: "qianfan", displayName: "Qianfan", defaultApiBase: "https://qianfan.baidubce.com/v2", keywords: ["qianfan", "ernie"], baseMarker: "baidubce", envKey: "QIANFAN_API_KEY" },
];

/** A provider name as nanobot compares them: camelCase and "-" become snake_case. */
export const normalizeProviderName = (name: string): string =>
  name
    .replace(/-/g, "_")
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .toLowerCase();

export const providerSpec = (name: string): ProviderSpec | undefined => {
  const wanted = normalizeProviderName(name);
  return PROVIDERS.find((p) => p.name === wanted);
};
