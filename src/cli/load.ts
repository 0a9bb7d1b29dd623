import { loadConfig, type LoadedConfig } from "../config/index.js";

/** Loads config for a command and prints its warnings (unknown keys, migrations) to stderr. */
export async function loadForCli(env: NodeJS.ProcessEnv = process.env): Promise<LoadedConfig> {
  const loaded = await loadConfig(env);
  for (const w of loaded.warnings) console.error(`warning: ${w}`);
  return loaded;
}
