import type { Config } from "./schema.js";

/**
 * nanobot's model presets: agents.defaults.modelPreset names one of the top-level modelPresets,
 * whose model, provider, maxTokens, contextWindowTokens, temperature and reasoningEffort take the
 * place of agents.defaults' own. "default" names agents.defaults itself and cannot be defined.
 */
export function applyModelPreset(config: Config, problems: string[]): Config {
  const names = Object.keys(config.modelPresets);
  if (names.includes("default")) {
    problems.push('modelPresets.default: the name "default" is reserved for agents.defaults; rename that preset');
  }
  const name = config.agents.defaults.modelPreset;
  if (!name || name === "default") return config;
  const preset = config.modelPresets[name];
  if (!preset) {
    problems.push(
      `agents.defaults.modelPreset: ${JSON.stringify(name)} is not in modelPresets (${names.length ? `it has ${names.join(", ")}` : "there are none"}); add it there or remove modelPreset`,
    );
    return config;
  }
  const { model, provider, maxTokens, contextWindowTokens, temperature, reasoningEffort } = preset;
  return {
    ...config,
    agents: { ...config.agents, defaults: { ...config.agents.defaults, model, provider, maxTokens, contextWindowTokens, temperature, reasoningEffort } },
  };
}
