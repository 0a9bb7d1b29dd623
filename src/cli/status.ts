import { existsSync } from "node:fs";
import type { LoadedConfig } from "../config/index.js";
import { resolveProvider } from "../providers/registry.js";
import { VERSION } from "../version.js";

/** What `troupe status` prints: where things are and what is configured, never a key. */
export function statusLines({ config, paths, workspace, fromFile }: LoadedConfig): string[] {
  const d = config.agents.defaults;
  const providers = Object.entries(config.providers).map(
    ([name, p]) => `${name} (${p.apiKey ? "key set" : "no key"}${p.apiBase ? `, ${p.apiBase}` : ""})`,
  );
  let provider: string;
  try {
    const r = resolveProvider(config, paths.configFile);
    provider = `${r.spec.name} at ${r.apiBase} (model sent as ${r.model})`;
  } catch (err) {
    provider = `not ready: ${(err as Error).message}`;
  }
  return [
    `troupe ${VERSION}`,
    `config:    ${paths.configFile}${fromFile ? "" : " (missing: run `troupe onboard`)"}`,
    `data dir:  ${paths.dataDir}`,
    `workspace: ${workspace}${existsSync(workspace) ? "" : " (missing: run `troupe onboard`)"}`,
    `model:     ${d.model}`,
    `provider:  ${d.provider === "auto" ? "auto → " : ""}${provider}`,
    `providers: ${providers.length ? providers.join(", ") : "none configured (set providers.<name>.apiKey)"}`,
    `store:     ${paths.storeDir}`,
    `gateway:   ${config.gateway.host}:${config.gateway.port}`,
  ];
}
