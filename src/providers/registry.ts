import type { Config, ProviderConfig } from "../config/schema.js";
import { TroupeError } from "../errors.js";

/**
 * The providers troupe knows, as data. Resolution order (as nanobot): an explicit
 * agents.defaults.provider; else the model's prefix ("deepseek/..."); else a keyword in the model
 * name; else an api key prefix ("sk-or-"); else a configured apiBase; else the first provider with a key.
 */
export interface ProviderSpec {
  name: string;
  displayName: string;
  defaultApiBase: string | null;
  keywords: string[];
  keyPrefix?: string;
  /** A substring of apiBase that identifies it. */
  baseMarker?: string;
  /** Gateways route many vendors' models and keep the model's "vendor/" prefix. */
  isGateway?: boolean;
  /** Local servers need no api key. */
  isLocal?: boolean;
  envKey?: string;
}

export const PROVIDERS: ProviderSpec[] = [
  { name: "custom", displayName: "Custom (OpenAI-compatible)", defaultApiBase: null, keywords: [], isLocal: true },
  { name: "openrouter", displayName: "OpenRouter", defaultApiBase: "https://openrouter.ai/api/v1", keywords: ["openrouter"], keyPrefix: "sk-or-", baseMarker: "openrouter", isGateway: true, envKey: "OPENROUTER_API_KEY" },
  { name: "openai", displayName: "OpenAI", defaultApiBase: "https://api.openai.com/v1", keywords: ["gpt", "o1", "o3", "o4"], baseMarker: "api.openai.com", envKey: "OPENAI_API_KEY" },
  { name: "deepseek", displayName: "DeepSeek", defaultApiBase: "https://api.deepseek.com/v1", keywords: ["deepseek"], baseMarker: "deepseek", envKey: "DEEPSEEK_API_KEY" },
  { name: "groq", displayName: "Groq", defaultApiBase: "https://api.groq.com/openai/v1", keywords: ["groq"], keyPrefix: "gsk_", baseMarker: "groq", envKey: "GROQ_API_KEY" },
  { name: "moonshot", displayName: "Moonshot", defaultApiBase: "https://api.moonshot.ai/v1", keywords: ["moonshot", "kimi"], baseMarker: "moonshot", envKey: "MOONSHOT_API_KEY" },
  { name: "dashscope", displayName: "DashScope (Qwen)", defaultApiBase: "https://dashscope.aliyuncs.com/compatible-mode/v1", keywords: ["qwen", "dashscope"], baseMarker: "dashscope", envKey: "DASHSCOPE_API_KEY" },
  { name: "zhipu", displayName: "Zhipu AI", defaultApiBase: "https://open.bigmodel.cn/api/paas/v4", keywords: ["glm", "zhipu"], baseMarker: "bigmodel", envKey: "ZHIPUAI_API_KEY" },
  { name: "gemini", displayName: "Gemini (OpenAI endpoint)", defaultApiBase: "https://generativelanguage.googleapis.com/v1beta/openai", keywords: ["gemini"], baseMarker: "generativelanguage", envKey: "GEMINI_API_KEY" },
  { name: "ollama", displayName: "Ollama", defaultApiBase: "http://localhost:11434/v1", keywords: ["ollama"], baseMarker: "11434", isLocal: true },
  { name: "vllm", displayName: "vLLM", defaultApiBase: "http://localhost:8000/v1", keywords: ["vllm"], baseMarker: "8000", isLocal: true },
];

export const providerSpec = (name: string): ProviderSpec | undefined => PROVIDERS.find((p) => p.name === name);

export interface ResolvedProvider {
  spec: ProviderSpec;
  apiKey: string;
  apiBase: string;
  extraHeaders: Record<string, string>;
  /** The model name to send, with a non-gateway vendor prefix removed. */
  model: string;
}

export class ProviderNotConfiguredError extends TroupeError {}

const EMPTY: ProviderConfig = { apiKey: "", apiBase: null, extraHeaders: null };

function usable(spec: ProviderSpec, cfg: ProviderConfig | undefined): boolean {
  if (!cfg) return false;
  return Boolean(cfg.apiKey) || (Boolean(spec.isLocal) && Boolean(cfg.apiBase ?? spec.defaultApiBase));
}

/**
 * A provider named in config.providers that the registry does not know is, as in nanobot, a custom
 * OpenAI-compatible endpoint (its apiBase); names compare without case, "-" as "_".
 */
function customSpec(config: Config, name: string): ProviderSpec | undefined {
  const norm = (s: string) => s.toLowerCase().replace(/-/g, "_");
  const key = Object.keys(config.providers).find((k) => norm(k) === norm(name));
  if (key === undefined || providerSpec(key)) return undefined;
  return { name: key, displayName: `${key} (custom, OpenAI-compatible)`, defaultApiBase: null, keywords: [], isLocal: true };
}

function pick(config: Config): ProviderSpec | undefined {
  const { model, provider } = config.agents.defaults;
  if (provider !== "auto") return providerSpec(provider) ?? customSpec(config, provider);
  const configured = PROVIDERS.filter((s) => usable(s, config.providers[s.name]));
  const prefix = model.includes("/") ? model.split("/")[0]?.toLowerCase() : undefined;
  const byPrefix = configured.find((s) => s.name === prefix);
  if (byPrefix) return byPrefix;
  const customByPrefix = prefix ? customSpec(config, prefix) : undefined;
  if (customByPrefix) return customByPrefix;
  const lower = model.toLowerCase();
  const byKeyword = configured.find((s) => s.keywords.some((k) => lower.includes(k)));
  if (byKeyword) return byKeyword;
  const byKey = configured.find((s) => s.keyPrefix && config.providers[s.name]?.apiKey.startsWith(s.keyPrefix));
  if (byKey) return byKey;
  for (const cfg of Object.values(config.providers)) {
    const byBase = cfg.apiBase ? PROVIDERS.find((s) => s.baseMarker && cfg.apiBase?.includes(s.baseMarker)) : undefined;
    if (byBase && configured.includes(byBase)) return byBase;
  }
  // A key for a gateway routes any model; otherwise take the first configured provider.
  return configured.find((s) => s.isGateway) ?? configured[0];
}

/** Resolves which endpoint, key and model name a turn uses, or says what to configure. */
export function resolveProvider(config: Config, configFile = "config.json"): ResolvedProvider {
  const { model, provider } = config.agents.defaults;
  const spec = pick(config);
  if (!spec) {
    if (provider !== "auto") {
      throw new ProviderNotConfiguredError(
        `agents.defaults.provider is "${provider}", which troupe does not know; use one of: ${PROVIDERS.map((p) => p.name).join(", ")}, or "auto", or name a provider you define under providers with its apiBase`,
      );
    }
    throw new ProviderNotConfiguredError(
      `no LLM provider configured: set providers.openai.apiKey (or another provider's) in ${configFile}, or export TROUPE_PROVIDERS__OPENAI__API_KEY`,
    );
  }
  const cfg = config.providers[spec.name] ?? EMPTY;
  const apiBase = cfg.apiBase ?? spec.defaultApiBase;
  if (!apiBase) {
    throw new ProviderNotConfiguredError(`providers.${spec.name}.apiBase is not set: give the URL of your OpenAI-compatible endpoint in ${configFile}`);
  }
  if (!cfg.apiKey && !spec.isLocal) {
    throw new ProviderNotConfiguredError(
      `providers.${spec.name}.apiKey is not set: add it to ${configFile} or export TROUPE_PROVIDERS__${spec.name.toUpperCase()}__API_KEY`,
    );
  }
  const prefix = `${spec.name}/`;
  const sendModel = !spec.isGateway && model.toLowerCase().startsWith(prefix) ? model.slice(prefix.length) : model;
  return { spec, apiKey: cfg.apiKey || "no-key", apiBase, extraHeaders: cfg.extraHeaders ?? {}, model: sendModel };
}
