import ipaddr from "ipaddr.js";
import { z } from "zod";

/**
 * troupe's config.json, shaped like nanobot's so a nanobot user can copy theirs.
 * Keys are camelCase here; the loader also accepts snake_case (see normalize.ts).
 */

const isRegex = (s: string) => {
  try {
    new RegExp(s);
    return true;
  } catch {
    return false;
  }
};
const regexString = z.string().refine(isRegex, "not a valid regular expression");
const addressOrCidr = z
  .string()
  .refine((s) => (s.includes("/") ? ipaddr.isValidCIDR(s) : ipaddr.isValid(s)), "expected an IP address or a CIDR such as 10.0.0.0/8");

const isHttpUrl = (s: string) => {
  try {
    const url = new URL(s);
    return (url.protocol === "http:" || url.protocol === "https:") && url.host !== "";
  } catch {
    return false;
  }
};
/** An endpoint URL, refused when the config loads rather than at the first request. */
const httpUrl = z.string().superRefine((s, ctx) => {
  if (isHttpUrl(s)) return;
  const example = s.includes("://") ? "https://api.example.com/v1" : `http://${s}`;
  ctx.addIssue({ code: "custom", message: `${JSON.stringify(s)} is not an http(s) URL (e.g. ${example})` });
});
/** Node fires a timer longer than 2^31-1 ms at once, so durations that become timers stay below it. */
const MAX_TIMER_SECONDS = 2_147_483;

const providerSchema = z.object({
  apiKey: z.string().default(""),
  apiBase: httpUrl.nullable().default(null),
  extraHeaders: z.record(z.string(), z.string()).nullable().default(null),
});
export type ProviderConfig = z.infer<typeof providerSchema>;

const agentDefaultsSchema = z.object({
  /** Empty means `<data dir>/workspace`; `~` and relative paths are resolved by the loader. */
  workspace: z.string().default(""),
  model: z.string().default("gpt-4o-mini"),
  /** A provider name from the registry, or "auto" to infer it from the model, key or apiBase. */
  provider: z.string().default("auto"),
  maxTokens: z.number().int().positive().default(8192),
  contextWindowTokens: z.number().int().positive().default(65_536),
  temperature: z.number().min(0).max(2).default(0.1),
  maxToolIterations: z.number().int().positive().default(40),
  maxConcurrentSubagents: z.number().int().positive().default(4),
  /** Tool iterations one subagent may use before it must answer. */
  maxSubagentIterations: z.number().int().positive().default(15),
  maxConcurrentTurns: z.number().int().positive().default(8),
  reasoningEffort: z.enum(["low", "medium", "high"]).nullable().default(null),
  timezone: z.string().default("UTC"),
  /** Idle sessions passivate (actor stopped, state kept in LevelDB) after this many seconds. */
  sessionIdleSeconds: z.number().int().positive().max(MAX_TIMER_SECONDS).default(300),
  /** A model call that receives no byte for this long is abandoned and retried. */
  modelIdleTimeoutSeconds: z.number().positive().max(MAX_TIMER_SECONDS).default(60),
  /** One model call, its retries included, ends after this long. */
  modelTimeoutSeconds: z.number().positive().max(MAX_TIMER_SECONDS).default(600),
  /** Reply text beyond this many characters is cut (with a note); a tool call whose arguments take the reply past it is refused. */
  maxReplyChars: z.number().int().positive().max(10_000_000).default(100_000),
  /** Dream: digests history.jsonl into SOUL.md, USER.md and memory/MEMORY.md every intervalH hours (nanobot's keys). */
  dream: z
    .object({
      enabled: z.boolean().default(true),
      intervalH: z.number().positive().max(MAX_TIMER_SECONDS / 3600).default(2),
      maxBatchSize: z.number().int().positive().default(20),
      maxIterations: z.number().int().positive().default(10),
      modelOverride: z.string().min(1).nullable().default(null),
    })
    .prefault({}),
});

const telegramSchema = z.object({
  enabled: z.boolean().default(false),
  token: z.string().default(""),
  allowFrom: z.array(z.string()).default([]),
  proxy: z.string().nullable().default(null),
  replyToMessage: z.boolean().default(false),
  groupPolicy: z.enum(["mention", "open"]).default("mention"),
  streaming: z.boolean().default(false),
  apiRoot: httpUrl.default("https://api.telegram.org"),
  /** Voice messages are transcribed by this OpenAI-compatible endpoint when apiBase is set; else passed as a file. */
  transcription: z
    .object({ apiBase: httpUrl.nullable().default(null), apiKey: z.string().default(""), model: z.string().default("whisper-1") })
    .prefault({}),
});

const channelsSchema = z.object({
  sendProgress: z.boolean().default(true),
  sendToolHints: z.boolean().default(false),
  telegram: telegramSchema.prefault({}),
});

const gatewaySchema = z.object({
  host: z.string().default("127.0.0.1"),
  port: z.number().int().min(0).max(65_535).default(18_790),
});

const mcpServerSchema = z.object({
  command: z.string().default(""),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).default({}),
  url: z.string().default(""),
  headers: z.record(z.string(), z.string()).default({}),
  toolTimeout: z.number().positive().default(30),
});

const toolsSchema = z.object({
  web: z
    .object({
      proxy: z.string().nullable().default(null),
      search: z
        .object({
          provider: z.string().default("brave"),
          apiKey: z.string().default(""),
          maxResults: z.number().int().positive().default(5),
        })
        .prefault({}),
    })
    .prefault({}),
  exec: z
    .object({
      timeout: z.number().int().positive().max(600).default(60),
      pathAppend: z.string().default(""),
      allowedEnvKeys: z.array(z.string()).default([]),
      denyPatterns: z.array(regexString).default([]),
      allowPatterns: z.array(regexString).default([]),
      /** With restrictToWorkspace: "auto" sandboxes commands with bubblewrap when bwrap is on PATH. */
      // nanobot writes "" (no backend chosen) here: troupe reads that as its default.
      sandbox: z.preprocess((v) => (v === "" ? undefined : v), z.enum(["auto", "bwrap", "none"]).default("auto")),
    })
    .prefault({}),
  restrictToWorkspace: z.boolean().default(true),
  /** When restricted, file tools refuse a file with several names (a hard link may name one outside) unless this is on. */
  allowHardLinks: z.boolean().default(false),
  maxToolResultChars: z.number().int().positive().default(16_000),
  ssrfWhitelist: z.array(addressOrCidr).default([]),
  mcpServers: z.record(z.string(), mcpServerSchema).default({}),
});

export const configSchema = z.object({
  agents: z.object({ defaults: agentDefaultsSchema.prefault({}) }).prefault({}),
  providers: z.record(z.string(), providerSchema).default({}),
  channels: channelsSchema.prefault({}),
  gateway: gatewaySchema.prefault({}),
  tools: toolsSchema.prefault({}),
});

export type Config = z.infer<typeof configSchema>;
export type AgentDefaults = Config["agents"]["defaults"];

export function defaultConfig(): Config {
  return configSchema.parse({});
}
