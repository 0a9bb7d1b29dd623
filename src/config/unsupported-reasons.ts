import { NANOBOT_KEYS } from "./nanobot-keys.js";

/**
 * Why troupe leaves a nanobot setting alone, for the startup line that names them. Keys are
 * matched as the key list spells them (camelCase, dotted); the first pattern that matches says why.
 */
const REASONS: Array<[RegExp, string]> = [
  [/^channels\.telegram\.(mode|webhook\w*)$/, "troupe's Telegram channel long-polls, it has no webhook"],
  [/^channels\.telegram\.(connectionPoolSize|poolTimeout)$/, "troupe's Telegram client keeps its own connections"],
  [/^channels\.telegram\.streamEditInterval$/, "troupe edits a streamed Telegram message at most once a second"],
  [/^agents\.defaults\.(botIcon|botName)$|^tools\.(webui\w*|allowLocalPreviewAccess)$|^webui(\.|$)/, "for nanobot's web UI, which troupe does not have (its inspector is at /inspector)"],
  [/^agents\.defaults\.consolidationRatio$/, "troupe consolidates a session over its token budget (agents.defaults.contextWindowTokens) down to half of it, not to a ratio"],
  [/^providers\.[^.]+\.apiType$/, "troupe speaks the OpenAI-compatible chat API to every provider"],
  [/^tools\.my(\.|$)/, 'nanobot\'s "my" tool (the agent checking and changing its own runtime settings), which troupe does not have'],
  [/^api(\.|$)/, "nanobot's OpenAI-compatible API server, where troupe has its control API (gateway.host, gateway.port)"],
];

export const NOT_BUILT = "not built in troupe yet";

export function unsupportedReason(key: string): string {
  // A channel section (it has an `enabled` switch), not a setting of all channels such as channels.sendMaxRetries.
  if (/^channels\.[^.]+$/.test(key) && NANOBOT_KEYS[`${key}.enabled`]) return "troupe runs Telegram and its control API only";
  return REASONS.find(([pattern]) => pattern.test(key))?.[1] ?? NOT_BUILT;
}
