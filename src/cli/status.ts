import { resolveTranscription } from "../channels/transcription.js";
import { existsSync } from "node:fs";
import { dirname, relative } from "node:path";
import { diskSpace, formatBytes, lowSpaceLine, type SpaceFloor } from "../store/disk.js";
import { storeStateLine } from "./storage-lines.js";
import type { LoadedConfig } from "../config/index.js";
import type { DataPaths } from "../paths.js";
import { connectDaemon } from "./client.js";
import type { ActorsResponse } from "./daemon.js";
import { checkGateway } from "./pidfile.js";
import { loadSkills } from "../context/skills.js";
import { hookFiles } from "../hooks/load.js";
import { resolveProvider } from "../providers/registry.js";
import { fallbackChoices } from "../providers/fallback.js";
import { exposedControlApi } from "../server/host-check.js";
import { describeExecIsolation } from "../tools/exec-isolation.js";
import { VERSION } from "../version.js";
import { nanobotLine } from "./nanobot-leftovers.js";

/** Whether this data dir's daemon runs, and which of its channels failed or cannot reach their platform. */
async function daemonLine(paths: DataPaths): Promise<string> {
  const check = await checkGateway(paths);
  const client = await connectDaemon(paths, 2_000, check);
  if (!client) return check.kind === "ours" || check.kind === "unknown" ? `pid ${check.info.pid} runs but does not answer on ${check.info.url}` : "not running (troupe daemon start)";
  const { channels = [] } = await client.get<ActorsResponse>("/api/actors").catch(() => ({}) as Partial<ActorsResponse>);
  const failed = channels.filter((c) => c.state === "failed").map((c) => c.name);
  const backingOff = channels.filter((c) => c.state === "backing_off").map((c) => c.name);
  const store = storeStateLine(check.kind === "ours" ? check.health : undefined);
  return `running (pid ${client.pid}) on ${client.url}${failed.length ? `; failed: ${failed.join(", ")}` : ""}${backingOff.length ? `; backing off: ${backingOff.join(", ")} (troupe daemon status says why)` : ""}${store ? `\nstore:     ${store}` : ""}`;
}

/** The free space under the data dir, with a warning under the floor (measured here: no daemon needed). */
async function diskLine(paths: DataPaths, floor: SpaceFloor): Promise<string> {
  const dir = existsSync(paths.dataDir) ? paths.dataDir : dirname(paths.dataDir);
  try {
    const space = await diskSpace(dir);
    const low = lowSpaceLine(space, floor, paths.dataDir);
    return low ? `LOW: ${low}` : `${formatBytes(space.free)} free of ${formatBytes(space.size)}`;
  } catch (err) {
    return `could not be measured: ${(err as Error).message}`;
  }
}

/** Where voice and audio go to be transcribed, or why they stay files (never the key). */
function voiceLine(config: LoadedConfig["config"]): string {
  const t = resolveTranscription(config);
  return t.on ? `transcribed by ${t.endpoint.source} at ${t.endpoint.apiBase} (model ${t.endpoint.model})` : `not transcribed: ${t.why}`;
}

/** Whether exec's commands run sandboxed, and how to fix it when they cannot or are not. */
function execLine({ config, paths }: LoadedConfig): string {
  const r = describeExecIsolation(config.tools, process.env, paths.configFile);
  return `${r.text}${r.fix ? `; ${r.fix}` : ""}`;
}

/** A bind off loopback, remarked on with the fix (doctor warns of it too). */
function gatewayRemark(host: string, tokenFile: string): string {
  const exposed = exposedControlApi(host, tokenFile);
  return exposed ? ` (not a loopback address: reachable from other machines; ${exposed.fix})` : "";
}

/** What `troupe status` prints: where things are, what is configured (never a key), and whether the daemon runs. */
export async function statusLines(loaded: LoadedConfig): Promise<string[]> {
  const { config, paths, workspace, fromFile, unrunnableChannels = [] } = loaded;
  const d = config.agents.defaults;
  const providers = Object.entries(config.providers).map(
    ([name, p]) => `${name} (${p.apiKey ? "key set" : "no key"}${p.apiBase ? `, ${p.apiBase}` : ""})`,
  );
  let provider: string;
  let defaulted: string | undefined;
  try {
    const r = resolveProvider(config, paths.configFile);
    defaulted = r.defaultedModel;
    provider = `${r.spec.name} at ${r.apiBase} (model sent as ${r.model})`;
  } catch (err) {
    provider = `not ready: ${(err as Error).message}`;
  }
  const fallbacks = fallbackChoices(config).map((c) => {
    try {
      const r = resolveProvider(config, paths.configFile, c);
      return `${c.model} (${r.spec.name} at ${r.apiBase})`;
    } catch (err) {
      return `${c.model} (not ready: ${(err as Error).message})`;
    }
  });
  const skills = await loadSkills(workspace, process.env, { disabled: config.agents.defaults.disabledSkills, onWarning: (w) => console.error(`warning: ${w}`) });
  const unavailable = skills.filter((s) => s.missing.length && !s.broken.length).map((s) => `${s.name} (${s.missing.join(", ")})`);
  const broken = skills.filter((s) => s.broken.length).map((s) => `${s.name} (${s.broken.join("; ")})`);
  const hooks = await hookFiles(d.hooks, workspace).catch(() => []);
  const nanobot = await nanobotLine(workspace, paths.dataDir);
  return [
    `troupe ${VERSION}`,
    `config:    ${paths.configFile}${fromFile ? "" : " (missing: run `troupe onboard`)"}`,
    `data dir:  ${paths.dataDir}`,
    `workspace: ${workspace}${existsSync(workspace) ? "" : " (missing: run `troupe onboard`)"}`,
    `model:     ${defaulted ? `${defaulted} (none configured: ${defaulted.split("/")[0]}'s default)` : d.model}${d.modelPreset && d.modelPreset !== "default" ? ` (preset ${d.modelPreset})` : ""}`,
    `provider:  ${d.provider === "auto" ? "auto → " : ""}${provider}`,
    ...(fallbacks.length ? [`fallbacks: ${fallbacks.join(", ")}`] : []),
    `providers: ${providers.length ? providers.join(", ") : "none configured (set providers.<name>.apiKey)"}`,
    `store:     ${paths.storeDir}`,
    `gateway:   ${config.gateway.host}:${config.gateway.port}${gatewayRemark(config.gateway.host, paths.tokenFile)}`,
    `disk:      ${await diskLine(paths, config.storage)}`,
    `daemon:    ${await daemonLine(paths)}`,
    `skills:    ${skills.length}${unavailable.length ? `; unavailable: ${unavailable.join(", ")}` : ""}${broken.length ? `; broken: ${broken.join(", ")}` : ""}`,
    // Only listed: a module is imported (and checked) when a turn runtime starts; its errors are in the log.
    ...(hooks.length ? [`hooks:     ${hooks.map((h) => `${relative(workspace, h.path).startsWith("..") ? h.path : relative(workspace, h.path)}${h.exists ? "" : " (missing)"}`).join(", ")}`] : []),
    `channels:  api${config.channels.telegram.enabled ? ", telegram" : " (telegram disabled)"}`,
    `voice:     ${voiceLine(config)}`,
    `exec:      ${execLine(loaded)}`,
    ...(nanobot ? [`nanobot:   ${nanobot.line}`] : []),
    ...(unrunnableChannels.length
      ? [`not run:   ${unrunnableChannels.join(", ")} enabled, but troupe cannot run ${unrunnableChannels.length > 1 ? "them" : "it"} yet (set enabled to false to silence this)`]
      : []),
  ];
}
