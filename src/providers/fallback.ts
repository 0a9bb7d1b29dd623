import type { Logger } from "pino";
import type { Config } from "../config/schema.js";
import { ModelCallError, type ChatRequest, type LlmProvider } from "./client.js";
import type { ModelResponse } from "./messages.js";
import type { ModelChoice } from "./registry.js";

/** One entry of agents.defaults.fallbackModels, with its generation settings filled in. */
export interface FallbackChoice extends ModelChoice {
  maxTokens: number;
  temperature: number;
  reasoningEffort: string | null;
}

/**
 * agents.defaults.fallbackModels as nanobot reads them: a string names a modelPresets entry (else it
 * is a model name, its provider found as for agents.defaults.model); an object is inline, its unset
 * settings taken from agents.defaults.
 */
export function fallbackChoices(config: Config): FallbackChoice[] {
  const d = config.agents.defaults;
  return d.fallbackModels.map((f) => {
    if (typeof f === "string") {
      const preset = config.modelPresets[f];
      if (preset) return { model: preset.model, provider: preset.provider, maxTokens: preset.maxTokens, temperature: preset.temperature, reasoningEffort: preset.reasoningEffort };
      return { model: f, provider: "auto", maxTokens: d.maxTokens, temperature: d.temperature, reasoningEffort: d.reasoningEffort };
    }
    return {
      model: f.model,
      provider: f.provider,
      maxTokens: f.maxTokens ?? d.maxTokens,
      temperature: f.temperature ?? d.temperature,
      reasoningEffort: f.reasoningEffort ?? d.reasoningEffort,
    };
  });
}

export interface FallbackCandidate {
  /** The model as configured, for logs and errors. */
  label: string;
  /** Built at its first use; throws (a ProviderNotConfiguredError) when its provider is not configured. */
  create: () => LlmProvider;
}

/**
 * The primary model, then each fallback in order, each with its own retries: the next is tried when
 * one fails for good (a ModelCallError: not retryable, or out of retries). A cancelled call is never
 * passed on. The response names the model that answered.
 */
export function withFallbacks(primary: LlmProvider, candidates: FallbackCandidate[], logger?: Logger): LlmProvider {
  if (!candidates.length) return primary;
  const built = new Map<number, LlmProvider>();
  const label = (p: LlmProvider) => `${p.name}/${p.model}`;
  return {
    name: primary.name,
    model: primary.model,
    async chat(req: ChatRequest): Promise<ModelResponse> {
      const failures: string[] = [];
      let last: ModelCallError | undefined;
      let current = label(primary);
      try {
        return await primary.chat(req);
      } catch (err) {
        if (req.signal?.aborted || !(err instanceof ModelCallError)) throw err;
        failures.push(err.message);
        last = err;
      }
      for (const [index, candidate] of candidates.entries()) {
        let provider = built.get(index);
        if (!provider) {
          try {
            provider = candidate.create();
            built.set(index, provider);
          } catch (err) {
            const why = `fallback ${candidate.label} cannot be used: ${(err as Error).message}`;
            logger?.warn({ fallback: candidate.label }, why);
            failures.push(why);
            continue;
          }
        }
        const previous = failures[failures.length - 1] ?? "";
        logger?.warn({ from: current, to: label(provider), err: previous }, "model failed; trying the next fallback model");
        req.onFallback?.({ from: current, to: label(provider), error: previous });
        current = label(provider);
        try {
          return await provider.chat(req);
        } catch (err) {
          if (req.signal?.aborted || !(err instanceof ModelCallError)) throw err;
          failures.push(err.message);
          last = err;
        }
      }
      // The last failure's cause stays reachable (its HTTP status: a refused image request is sent again without images).
      throw new ModelCallError(`every model failed (${candidates.length + 1} tried in order): ${failures.join("; then ")}`, { cause: last?.cause ?? last });
    },
  };
}
