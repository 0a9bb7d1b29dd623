import type { ProviderSpec } from "./vendors.js";

/**
 * A request's generation fields (the token limit, temperature, reasoning effort) for a provider
 * and model, by nanobot's rules (OpenAICompatProvider._build_kwargs in
 * nanobot/providers/openai_compat_provider.py): OpenAI's reasoning models take
 * max_completion_tokens and refuse a temperature other than their default.
 */

export interface Generation {
  maxTokens: number;
  temperature: number;
  /** agents.defaults.reasoningEffort; unset (null) leaves every provider its default. */
  reasoningEffort?: string | null;
}

export interface GenerationFields {
  /** The token limit under the name the model takes, and the temperature when it takes one. */
  limits: Record<string, unknown>;
  reasoningEffort?: string;
}

/** The model's own name, lowercased, without a gateway's "vendor/" path. */
const slugOf = (model: string): string => model.toLowerCase().split("/").pop() ?? "";

/** Moonshot's Kimi K3 always reasons, with fixed sampling. */
const KIMI_K3 = "kimi-k3";
/** Moonshot picks these models' temperature from their thinking mode: none is sent. */
const KIMI_SERVER_TEMPERATURE = new Set(["kimi-k2.5", "kimi-k2.6"]);
/** Moonshot takes only temperature 1.0 for these (a substring of the model name). */
const KIMI_FIXED_TEMPERATURE = "kimi-k2.7";

/** gpt-5 and the o-series (o1, o3, o4 and their variants, not "foo3-mini") take max_completion_tokens only. */
export function needsMaxCompletionTokens(model: string): boolean {
  const slug = slugOf(model);
  if (slug === KIMI_K3 || slug.includes("gpt-5")) return true;
  return ["o1", "o3", "o4"].some((p) => slug === p || slug.startsWith(`${p}-`) || slug.startsWith(`${p}.`));
}

/** OpenAI's reasoning models, and any model asked for a reasoning effort, refuse a temperature other than their default. */
export function takesTemperature(model: string, reasoningEffort?: string | null): boolean {
  if (slugOf(model) === KIMI_K3) return false;
  if (reasoningEffort && reasoningEffort.toLowerCase() !== "none") return false;
  const name = model.toLowerCase();
  return !["gpt-5", "o1", "o3", "o4"].some((token) => name.includes(token));
}

/** The fields for `model` (the name sent) at `spec`'s endpoint. */
export function generationFields(spec: ProviderSpec, model: string, g: Generation): GenerationFields {
  const limits: Record<string, unknown> = {};
  const tokens = Math.max(1, g.maxTokens);
  if (spec.maxCompletionTokens || spec.backend === "azure" || needsMaxCompletionTokens(model)) limits.max_completion_tokens = tokens;
  else limits.max_tokens = tokens;
  if (takesTemperature(model, g.reasoningEffort)) limits.temperature = g.temperature;
  if (spec.name === "moonshot") {
    if (model.toLowerCase().includes(KIMI_FIXED_TEMPERATURE)) limits.temperature = 1.0;
    if (KIMI_SERVER_TEMPERATURE.has(slugOf(model))) delete limits.temperature;
  }
  const effort = g.reasoningEffort;
  return { limits, ...(effort && effort.toLowerCase() !== "none" ? { reasoningEffort: effort } : {}) };
}
