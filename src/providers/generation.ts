import type { ThinkingStyle } from "../config/schema.js";
import type { ProviderSpec } from "./vendors.js";

/**
 * A request's generation fields (the token limit, temperature, reasoning effort) for a provider
 * and model, by nanobot's rules (OpenAICompatProvider._build_kwargs in
 * nanobot/providers/openai_compat_provider.py): OpenAI's reasoning models take
 * max_completion_tokens and refuse a temperature other than their default; providers that switch
 * thinking with a field of their own get it when a reasoning effort is set (and only then, so an
 * unset effort leaves each provider its default).
 */

export interface Generation {
  maxTokens: number;
  temperature: number;
  /** agents.defaults.reasoningEffort; unset (null) leaves every provider its default. */
  reasoningEffort?: string | null;
  /** How the provider switches thinking (ResolvedProvider.thinkingStyle). */
  thinkingStyle?: ThinkingStyle | null;
}

export interface GenerationFields {
  /** The token limit under the name the model takes, and the temperature when it takes one. */
  limits: Record<string, unknown>;
  reasoningEffort?: string;
  /** Fields beyond the standard ones (nanobot's extra_body): thinking switches. */
  extra: Record<string, unknown>;
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
  const fields: GenerationFields = { limits, extra: {} };
  applyReasoning(fields, spec, model, g);
  return fields;
}

/** Kimi models that switch thinking with {"thinking": {"type": …}} (not kimi-k2 nor kimi-k2-thinking). */
const KIMI_THINKING = ["kimi-k2.5", "kimi-k2.6", "kimi-k2.7", "kimi-k2.7-code", "kimi-k2.7-code-highspeed", "k2.6-code-preview"];
/** These always think: switching thinking off is refused, so it is never sent. */
const KIMI_ALWAYS_THINKING = new Set(["kimi-k2.7-code", "kimi-k2.7-code-highspeed"]);
/** Xiaomi's thinking models (mimo-v2-flash does not think). */
const MIMO_THINKING = ["mimo-v2.5-pro", "mimo-v2.5", "mimo-v2-pro", "mimo-v2-omni"];
const QWEN_THINKING = ["qwen3.7-max", "qwen3.7-plus", "qwen3.6-max-preview", "qwen3.6-plus", "qwen3.6-flash", "qwen3.5-plus", "qwen3.5-flash"];
/** Models whose own switch is sent whoever serves them (a gateway too). */
const MODEL_STYLES = new Map<string, ThinkingStyle>([
  ...KIMI_THINKING.map((m) => [m, "thinking_type"] as const),
  ...MIMO_THINKING.map((m) => [m, "thinking_type"] as const),
  ...QWEN_THINKING.map((m) => [m, "enable_thinking"] as const),
]);

const SWITCHES: Record<ThinkingStyle, (on: boolean) => Record<string, unknown>> = {
  thinking_type: (on) => ({ thinking: { type: on ? "enabled" : "disabled" } }),
  enable_thinking: (on) => ({ enable_thinking: on }),
  reasoning_split: (on) => ({ reasoning_split: on }),
};

function applyReasoning(fields: GenerationFields, spec: ProviderSpec, model: string, g: Generation): void {
  const given = g.reasoningEffort ?? undefined;
  if (given === undefined) return;
  // The effort as meant ("minimum" is DashScope's name for "minimal"), and as sent.
  let level = given.toLowerCase();
  if (level === "minimum") level = "minimal";
  let wire: string | undefined = given;
  const slug = slugOf(model);
  if (slug === KIMI_K3) {
    // K3 always reasons and takes only "max": off means its default, any other level "max".
    if (level === "none" || level === "minimal") wire = undefined;
    else level = wire = "max";
  }
  // DashScope refuses "minimal" and takes "minimum".
  if (spec.name === "dashscope" && level === "minimal") wire = "minimum";
  if (wire && level !== "none") fields.reasoningEffort = wire;

  const on = level !== "none" && level !== "minimal";
  const modelStyle = MODEL_STYLES.get(slug);
  const styles = new Set([g.thinkingStyle, modelStyle].filter((s): s is ThinkingStyle => Boolean(s)));
  const canSwitch = on || !KIMI_ALWAYS_THINKING.has(slug);
  if (canSwitch) for (const style of styles) Object.assign(fields.extra, SWITCHES[style](on));
  // OpenRouter does not pass the upstream switch on: its own reasoning field says the same.
  if (spec.gatewayReasoning && modelStyle && canSwitch) fields.extra.reasoning = { effort: level };
  // Moonshot refuses a request that has both reasoning_effort and its thinking switch.
  if (KIMI_THINKING.includes(slug)) delete fields.reasoningEffort;
}

/** `override` merged into `base` key by key, objects within objects too; neither is changed (nanobot's _deep_merge). */
export function deepMerge(base: Record<string, unknown>, override: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(override)) {
    const mine = out[key];
    out[key] = isObject(mine) && isObject(value) ? deepMerge(mine, value) : value;
  }
  return out;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
