import { DEFAULT_MODEL, type Config, type ProviderConfig, type ThinkingStyle } from "../config/schema.js";
import { TroupeError } from "../errors.js";
import { normalizeProviderName, PROVIDERS, providerSpec, type ProviderSpec } from "./vendors.js";

export { PROVIDERS, providerSpec, normalizeProviderName, type ProviderSpec } from "./vendors.js";

/**
 * Which provider serves a model, as nanobot decides it (Config._match_provider): an explicit
 * provider; else the model's prefix ("deepseek/…"); else a keyword of the model name, in registry
 * order; else a configured local server; else the first provider with a key (gateways first);
 * else a custom provider with an apiBase. A key or apiBase that belongs to a gateway ("sk-or-…",
 * "…openrouter.ai…") makes the entry holding it behave as that gateway.
 */
export interface ResolvedProvider {
  spec: ProviderSpec;
  apiKey: string;
  apiBase: string;
  extraHeaders: Record<string, string>;
  /** The model name to send, with a non-gateway vendor prefix removed. */
  model: string;
  /** How thinking is switched (providers.*.thinkingStyle, else the provider's own); none when unset. */
  thinkingStyle?: ThinkingStyle;
  /** providers.*.extraBody: merged into every request's body, over the thinking switch. */
  extraBody?: Record<string, unknown>;
  /** providers.*.extraQuery: added to the endpoint's URL. */
  extraQuery?: Record<string, string>;
  /** Azure's api-version query parameter. */
  apiVersion?: string;
  /** The key under `providers` this came from, when it differs from spec.name (a gateway detected by its key). */
  configKey?: string;
  /** Set when no model was configured and the provider's own default is used (as configured, before mapping). */
  defaultedModel?: string;
}

/** Which model and provider to use, when not agents.defaults' own (a fallback model, Dream's override). */
export interface ModelChoice {
  model: string;
  provider: string;
}

export class ProviderNotConfiguredError extends TroupeError {}

/** Azure's api-version when providers.azure_openai.apiVersion is not set (nanobot's fixed value). */
export const DEFAULT_AZURE_API_VERSION = "2024-10-21";

const EMPTY: ProviderConfig = { apiKey: "", apiBase: null, extraHeaders: null };

/** The entry under config.providers for a name, however it is spelt there (azure_openai, azureOpenai, azure-openai). */
function entryOf(config: Config, name: string): { key: string; cfg: ProviderConfig } | undefined {
  const wanted = normalizeProviderName(name);
  const key = Object.keys(config.providers).find((k) => normalizeProviderName(k) === wanted);
  const cfg = key === undefined ? undefined : config.providers[key];
  return key === undefined || !cfg ? undefined : { key, cfg };
}

/** A provider the user named under `providers` that the registry does not know: a custom OpenAI-compatible endpoint. */
function customSpec(config: Config, name: string): ProviderSpec | undefined {
  const entry = entryOf(config, name);
  if (!entry || providerSpec(entry.key)) return undefined;
  return { name: entry.key, displayName: `${entry.key} (custom, OpenAI-compatible)`, defaultApiBase: null, keywords: [], isDirect: true, stripPrefixes: [entry.key] };
}

const keyOptional = (spec: ProviderSpec) => Boolean(spec.isLocal) || (Boolean(spec.isDirect) && spec.backend !== "azure");
const envName = (name: string) => `TROUPE_PROVIDERS__${name.toUpperCase()}__API_KEY`;

function unsupported(spec: ProviderSpec): never {
  throw new ProviderNotConfiguredError(`providers.${spec.name}: ${spec.unsupported}`);
}

function keywordMatches(spec: ProviderSpec, model: string): boolean {
  const lower = model.toLowerCase();
  const snake = lower.replace(/-/g, "_");
  return spec.keywords.some((k) => lower.includes(k) || snake.includes(k.replace(/-/g, "_")));
}

/** The provider a model's name points to (its prefix, else a keyword), configured or not: the key to ask for. */
function impliedSpec(model: string): ProviderSpec | undefined {
  const prefix = model.includes("/") ? model.split("/")[0] : undefined;
  const byPrefix = prefix ? providerSpec(prefix) : undefined;
  if (byPrefix && !byPrefix.unsupported) return byPrefix;
  return PROVIDERS.find((s) => !s.unsupported && !s.isLocal && !s.isDirect && keywordMatches(s, model));
}

function pick(config: Config, model: string, provider: string): ProviderSpec | undefined {
  const cfgOf = (s: ProviderSpec) => entryOf(config, s.name)?.cfg;
  if (provider !== "auto") {
    const spec = providerSpec(provider) ?? customSpec(config, provider);
    if (spec?.unsupported) unsupported(spec);
    return spec;
  }
  const prefix = model.includes("/") ? model.split("/")[0] : undefined;
  const prefixed = prefix ? providerSpec(prefix) : undefined;
  // 1. An explicit prefix wins: "ollama/llama3.2", "deepseek/deepseek-chat".
  if (prefixed) {
    if (prefixed.unsupported) unsupported(prefixed);
    if (prefixed.isLocal || prefixed.isDirect || cfgOf(prefixed)?.apiKey) return prefixed;
  }
  // 2. A provider the user defined, named by the prefix ("companyProxy/gpt-4").
  const byCustomPrefix = prefix ? customSpec(config, prefix) : undefined;
  if (byCustomPrefix) return byCustomPrefix;
  // 3. A keyword of the model name. A local server only when its endpoint is configured and no other provider is named.
  for (const spec of PROVIDERS) {
    if (spec.unsupported || !keywordMatches(spec, model)) continue;
    const cfg = cfgOf(spec);
    if (spec.isLocal) {
      if (cfg?.apiBase && (!prefixed || prefixed === spec)) return spec;
      continue;
    }
    if (spec.isDirect || cfg?.apiKey) return spec;
  }
  // 4. A configured local server, one whose apiBase looks like its own first.
  if (!prefixed) {
    const locals = PROVIDERS.filter((s) => s.isLocal && cfgOf(s)?.apiBase);
    const marked = locals.find((s) => s.baseMarker && cfgOf(s)?.apiBase?.includes(s.baseMarker));
    if (marked ?? locals[0]) return marked ?? locals[0];
  }
  // 5. The first provider with a key, in registry order (gateways before vendors).
  const keyed = PROVIDERS.find((s) => !s.unsupported && cfgOf(s)?.apiKey);
  if (keyed) {
    // A vendor cannot serve another vendor's model by name: say which key is missing instead of sending it there.
    if (prefixed && prefixed !== keyed && !keyed.isGateway && !keyed.isDirect && !gatewayOf(cfgOf(keyed))) {
      throw new ProviderNotConfiguredError(
        `model "${model}" is ${prefixed.displayName}'s, but providers.${prefixed.name}.apiKey is not set (providers.${keyed.name} cannot serve it): set it, or export ${envName(prefixed.name)}, or use a gateway such as providers.openrouter`,
      );
    }
    return keyed;
  }
  // 6. The custom endpoint, or any provider the user defined, with an apiBase (such endpoints may need no key).
  for (const [key, cfg] of Object.entries(config.providers)) {
    const known = providerSpec(key);
    if (cfg.apiBase && (!known || known.name === "custom")) return known ?? customSpec(config, key);
  }
  return undefined;
}

/** A gateway that an entry's key or apiBase belongs to ("sk-or-…" under providers.openai is OpenRouter's). */
function gatewayOf(cfg: ProviderConfig | undefined): ProviderSpec | undefined {
  if (!cfg) return undefined;
  return PROVIDERS.find(
    (s) => s.isGateway && ((s.keyPrefix && cfg.apiKey.startsWith(s.keyPrefix)) || (s.baseMarker && cfg.apiBase?.includes(s.baseMarker))),
  );
}

/** The model name as the endpoint expects it: a vendor's own prefix removed ("deepseek/deepseek-chat" → "deepseek-chat"); gateways keep "vendor/". */
export function modelToSend(spec: ProviderSpec, model: string): string {
  const slash = model.indexOf("/");
  let sent = model;
  if (slash > 0 && spec.stripVendorPrefix) sent = model.slice(model.lastIndexOf("/") + 1);
  else if (slash > 0) {
    const strip = new Set((spec.stripPrefixes ?? []).map(normalizeProviderName));
    if (!spec.isGateway) strip.add(spec.name);
    if (strip.has(normalizeProviderName(model.slice(0, slash)))) sent = model.slice(slash + 1);
  }
  return spec.mapModel ? spec.mapModel(sent) : sent;
}

function nothingRoutes(model: string, configFile: string): never {
  const implied = impliedSpec(model);
  if (!implied || implied.name === "openai") {
    throw new ProviderNotConfiguredError(
      `no LLM provider configured: set providers.openai.apiKey (or another provider's) in ${configFile}, or export ${envName("openai")}`,
    );
  }
  throw new ProviderNotConfiguredError(
    `no LLM provider configured for model "${model}" (${implied.displayName}'s): set providers.${implied.name}.apiKey in ${configFile}, or export ${envName(implied.name)} (a gateway's key, such as providers.openrouter.apiKey, serves it too)`,
  );
}

/** Resolves which endpoint, key and model name a model call uses, or says exactly what to configure. */
export function resolveProvider(config: Config, configFile = "config.json", choice?: ModelChoice): ResolvedProvider {
  const model = choice?.model ?? config.agents.defaults.model;
  const provider = choice?.provider ?? config.agents.defaults.provider;
  const spec = pick(config, model, provider);
  if (!spec) {
    if (provider !== "auto") {
      throw new ProviderNotConfiguredError(
        `agents.defaults.provider is "${provider}", which troupe does not know; use one of: ${PROVIDERS.filter((p) => !p.unsupported).map((p) => p.name).join(", ")}, or "auto", or name a provider you define under providers with its apiBase`,
      );
    }
    nothingRoutes(model, configFile);
  }
  // No model configured and only, say, an Anthropic key: nanobot would use its default model (anthropic/claude-opus-4-5), not troupe's OpenAI one.
  const sent = !choice && model === DEFAULT_MODEL && spec.defaultModel && !keywordMatches(spec, model) ? spec.defaultModel : model;
  const entry = entryOf(config, spec.name);
  const cfg = entry?.cfg ?? EMPTY;
  const configKey = entry?.key ?? spec.name;
  const gateway = spec.isGateway || spec.isLocal || spec.isDirect ? undefined : gatewayOf(cfg);
  const acting = gateway ?? spec;
  const apiBase = cfg.apiBase ?? acting.defaultApiBase;
  if (!apiBase) {
    const what = spec.backend === "azure" ? "your Azure OpenAI endpoint (https://<resource>.openai.azure.com)" : "the URL of your OpenAI-compatible endpoint";
    throw new ProviderNotConfiguredError(`providers.${configKey}.apiBase is not set: give ${what} in ${configFile}`);
  }
  if (!cfg.apiKey && !keyOptional(spec)) {
    throw new ProviderNotConfiguredError(`providers.${configKey}.apiKey is not set: add it to ${configFile} or export ${envName(spec.name)}`);
  }
  return {
    spec: acting,
    apiKey: cfg.apiKey || "no-key",
    // Azure: the resource endpoint; a base copied with its /openai or /openai/v1 path would be doubled by the deployments path.
    apiBase: spec.backend === "azure" ? apiBase.replace(/\/openai(\/v1)?\/*$/, "/") : apiBase,
    extraHeaders: cfg.extraHeaders ?? {},
    model: modelToSend(acting, sent),
    ...(cfg.extraBody ? { extraBody: cfg.extraBody } : {}),
    ...(cfg.extraQuery ? { extraQuery: cfg.extraQuery } : {}),
    ...((cfg.thinkingStyle ?? acting.thinkingStyle) ? { thinkingStyle: cfg.thinkingStyle ?? acting.thinkingStyle } : {}),
    ...(spec.backend === "azure" ? { apiVersion: cfg.apiVersion ?? DEFAULT_AZURE_API_VERSION } : {}),
    ...(configKey !== acting.name ? { configKey } : {}),
    ...(sent !== model ? { defaultedModel: sent } : {}),
  };
}

/** `url` with providers.*.extraQuery's parameters added (one of the same name replaced). */
function withQuery(url: string, query: Record<string, string> | undefined): string {
  if (!query || !Object.keys(query).length) return url;
  const out = new URL(url);
  for (const [name, value] of Object.entries(query)) out.searchParams.set(name, value);
  return out.toString();
}

/** The chat-completions request for a resolved provider, for a direct probe (troupe doctor). */
export function chatEndpoint(r: ResolvedProvider): { url: string; headers: Record<string, string>; body: Record<string, unknown> } {
  const base = r.apiBase.replace(/\/+$/, "");
  if (r.spec.backend === "azure") {
    return {
      url: withQuery(`${base}/openai/deployments/${encodeURIComponent(r.model)}/chat/completions?api-version=${encodeURIComponent(r.apiVersion ?? DEFAULT_AZURE_API_VERSION)}`, r.extraQuery),
      headers: { "api-key": r.apiKey, ...r.extraHeaders },
      body: {},
    };
  }
  return { url: withQuery(`${base}/chat/completions`, r.extraQuery), headers: { authorization: `Bearer ${r.apiKey}`, ...r.extraHeaders }, body: { model: r.model } };
}
