import { z } from "zod";
import { isPlainObject, snakeToCamel } from "./normalize.js";
import { flag, httpUrl, MAX_TIMER_SECONDS, nonEmpty, nonNegative, nonNegativeInt, optionalText, positive, positiveInt, temperature, text, textRecord, texts } from "./schema-fields.js";
import { toolsSchema } from "./tools-schema.js";

/**
 * troupe's config.json, shaped like nanobot's so a nanobot user can copy theirs.
 * Keys are camelCase here; the loader also accepts snake_case (see normalize.ts). The fields the
 * schemas share are in schema-fields.ts, the tools section in tools-schema.ts.
 */

/** How a provider's thinking is switched on and off in the request (nanobot's thinking_style): see src/providers/generation.ts. */
export const THINKING_STYLES = ["thinking_type", "enable_thinking", "reasoning_split"] as const;
export type ThinkingStyle = (typeof THINKING_STYLES)[number];
const thinkingStyleSchema = z
  .string()
  .superRefine((s, ctx) => {
    if (s === "" || (THINKING_STYLES as readonly string[]).includes(s)) return;
    ctx.addIssue({ code: "custom", message: `${JSON.stringify(s)} is not a thinking style: use one of ${THINKING_STYLES.join(", ")} (or leave it out for none)` });
  })
  // Empty means none, as in nanobot.
  .transform((s) => (s === "" ? null : (s as ThinkingStyle)));

/** Request fields troupe sets itself: extraBody may not replace them. */
const BODY_FIELDS_OWN = ["messages", "tools", "stream"];
/** Fields merged into every request's body as written (nanobot's extra_body): vLLM's chat_template_kwargs, guided_json… */
const extraBodySchema = z.record(text, z.unknown()).superRefine((body, ctx) => {
  for (const key of BODY_FIELDS_OWN.filter((k) => Object.hasOwn(body, k))) {
    ctx.addIssue({ code: "custom", path: [key], message: `troupe sets ${key} itself; remove it from extraBody` });
  }
});

const providerSchema = z.object({
  apiKey: text.default(""),
  apiBase: httpUrl.nullable().default(null),
  extraHeaders: textRecord.nullable().default(null),
  /** Azure OpenAI's api-version (providers.azure_openai); unset means 2024-10-21, as nanobot sends. */
  apiVersion: nonEmpty.nullish(),
  extraBody: extraBodySchema.nullish(),
  /** Query parameters added to the endpoint's URL (nanobot's extra_query). */
  extraQuery: textRecord.nullish(),
  /** Replaces the provider's own way of switching thinking (a custom endpoint has none). */
  thinkingStyle: thinkingStyleSchema.nullish(),
});
export type ProviderConfig = z.infer<typeof providerSchema>;

/** nanobot's values: "none" sends no reasoning_effort; "minimum" is DashScope's name for "minimal". */
export const REASONING_EFFORTS = ["none", "minimal", "minimum", "low", "medium", "high", "xhigh", "max", "adaptive"] as const;
const reasoningEffortSchema = z.preprocess((v) => (typeof v === "string" ? v.toLowerCase() : v), z.enum(REASONING_EFFORTS));

/** A named model with its generation settings (nanobot's model_presets); unset fields take nanobot's preset defaults. */
const modelPresetSchema = z.object({
  label: optionalText.default(null),
  model: nonEmpty,
  provider: text.default("auto"),
  maxTokens: positiveInt.default(8192),
  contextWindowTokens: positiveInt.default(200_000),
  temperature: temperature.default(0.1),
  reasoningEffort: reasoningEffortSchema.nullable().default(null),
});
export type ModelPreset = z.infer<typeof modelPresetSchema>;

/**
 * A fallback model (nanobot's agents.defaults.fallbackModels entry): the name of a modelPresets entry,
 * else a model name (its provider found as for agents.defaults.model), or {model, provider, ...} inline.
 * Unset generation settings of an inline entry are agents.defaults' own.
 */
const fallbackModelSchema = z.union([
  nonEmpty,
  // Inside a list the loader does not rename keys: max_tokens is taken here.
  z.preprocess(
    (v) => (isPlainObject(v) ? Object.fromEntries(Object.entries(v).map(([k, x]) => [snakeToCamel(k), x])) : v),
    z.object({
      model: nonEmpty,
      provider: text.default("auto"),
      maxTokens: positiveInt.nullable().default(null),
      contextWindowTokens: positiveInt.nullable().default(null),
      temperature: temperature.nullable().default(null),
      reasoningEffort: reasoningEffortSchema.nullable().default(null),
    }),
  ),
]);
export type FallbackModel = z.infer<typeof fallbackModelSchema>;

/** agents.defaults.model when the config names none (a provider with a default model of its own uses that instead: see the registry). */
export const DEFAULT_MODEL = "gpt-4o-mini";

const agentDefaultsSchema = z.object({
  /** Empty means `<data dir>/workspace`; `~` and relative paths are resolved by the loader. */
  workspace: text.default(""),
  model: text.default(DEFAULT_MODEL),
  /** A provider name from the registry, or "auto" to infer it from the model, key or apiBase. */
  provider: text.default("auto"),
  maxTokens: positiveInt.default(8192),
  /** Not nanobot's 200,000 (which fits its Claude default): troupe's default model, gpt-4o-mini, takes 128k; this fits any current model. */
  contextWindowTokens: positiveInt.default(65_536),
  temperature: temperature.default(0.1),
  maxToolIterations: positiveInt.default(200),
  maxConcurrentSubagents: positiveInt.default(4),
  /** Tool iterations one subagent may use before it must answer; unset: maxToolIterations (nanobot gives subagents the agent's limit). */
  maxSubagentIterations: positiveInt.nullable().default(null),
  maxConcurrentTurns: positiveInt.default(8),
  reasoningEffort: reasoningEffortSchema.nullable().default(null),
  /** Tried in order when the model fails for good (not retryable, or out of retries); see fallbackModelSchema. */
  fallbackModels: z.array(fallbackModelSchema).default([]),
  /** "standard": a failing call is retried a few times; "persistent": transient failures are retried until they clear or /stop. */
  providerRetryMode: z.enum(["standard", "persistent"]).default("standard"),
  /** A name in the top-level modelPresets: its model, provider and generation settings replace the ones here (as in nanobot). */
  modelPreset: optionalText.default(null),
  /** Skills (folder names) left out of the prompt, as nanobot's agents.defaults.disabledSkills. */
  disabledSkills: texts.default([]),
  /** Hook modules (ESM, default export a hook object or a factory); `~` expands, relative paths are taken against the workspace. The workspace's hooks/ files run after them. */
  hooks: z.array(z.string().min(1, "a hook path is empty; give the module's path, e.g. hooks/reply-footer.mjs")).default([]),
  /** IANA timezone for cron expressions and times given without one. */
  timezone: z
    .string()
    .refine((tz) => {
      if (tz === "UTC") return true;
      try {
        return Boolean(new Intl.DateTimeFormat("en-US", { timeZone: tz }));
      } catch {
        return false;
      }
    }, 'unknown timezone; use an IANA name such as "Europe/Berlin" or "UTC"')
    .default("UTC"),
  /**
   * A session idle this many minutes has all but its last 8 messages archived (summarised into
   * history.jsonl) before its next turn (nanobot's idle auto-compaction; its older name
   * sessionTtlMinutes is read as it). 0: never.
   */
  idleCompactAfterMinutes: z.number({ error: "expected a whole number of minutes (0 turns idle compaction off)" }).int().min(0, "must be 0 (off) or a number of minutes").default(15),
  /** Idle sessions passivate (actor stopped, state kept in LevelDB) after this many seconds. */
  sessionIdleSeconds: positiveInt.max(MAX_TIMER_SECONDS).default(300),
  /** A model call that receives no byte for this long is abandoned and retried. */
  modelIdleTimeoutSeconds: positive.max(MAX_TIMER_SECONDS).default(60),
  /** One model call, its retries included, ends after this long. */
  modelTimeoutSeconds: positive.max(MAX_TIMER_SECONDS).default(600),
  /** Reply text beyond this many characters is cut (with a note); a tool call whose arguments take the reply past it is refused. */
  maxReplyChars: positiveInt.max(10_000_000).default(100_000),
  /** Tool hints shown while a turn runs ("read …/agent/loop.py", "$ npm test") are cut to this many characters (nanobot's key). */
  toolHintMaxLength: z.number().int().min(10).max(1_000).default(40),
  /** Dream: digests history.jsonl into SOUL.md, USER.md and memory/MEMORY.md every intervalH hours (nanobot's keys). */
  dream: z
    .object({
      enabled: flag.default(true),
      intervalH: positive.max(MAX_TIMER_SECONDS / 3600).default(2),
      maxBatchSize: positiveInt.default(20),
      maxIterations: positiveInt.default(15),
      modelOverride: nonEmpty.nullable().default(null),
    })
    .prefault({}),
});

const telegramSchema = z.object({
  enabled: flag.default(false),
  token: text.default(""),
  allowFrom: z
    .array(z.string({ error: (iss) => (typeof iss.input === "number" ? `expected a string: write the id in quotes ("${iss.input}")` : undefined) }))
    .default([]),
  proxy: optionalText.default(null),
  replyToMessage: flag.default(false),
  /** The reaction put on a message once it is taken in, taken back with the reply (nanobot's); "" for none. */
  reactEmoji: text.default("👀"),
  groupPolicy: z.enum(["mention", "open"]).default("mention"),
  streaming: flag.default(true),
  apiRoot: httpUrl.default("https://api.telegram.org"),
});

/**
 * Speech to text for voice and audio on every channel (src/channels/transcription.ts). The endpoint is
 * the provider's (its providers.<name> key and apiBase, or its default), or apiBase: any
 * OpenAI-compatible /audio/transcriptions (a local whisper server needs no key).
 */
const transcriptionSchema = z.object({
  enabled: flag.default(true),
  apiBase: httpUrl.nullable().default(null),
  apiKey: text.default(""),
  /** null: the provider's default (whisper-large-v3 on Groq, whisper-1 on OpenAI and other endpoints). */
  model: z.preprocess((v) => (v === "" ? null : v), optionalText.default(null)),
  maxUploadMb: positive.default(25),
});

const channelsSchema = z.object({
  sendProgress: flag.default(true),
  sendToolHints: flag.default(false),
  /** nanobot's keys: which provider transcribes (groq or openai), and in which language (null: detected). */
  transcriptionProvider: text.default("groq"),
  transcriptionLanguage: z.preprocess((v) => (v === "" ? null : v), optionalText.default(null)),
  transcription: transcriptionSchema.prefault({}),
  telegram: telegramSchema.prefault({}),
});

const gatewaySchema = z.object({
  host: text.default("127.0.0.1"),
  port: z.number().int().min(0).max(65_535).default(18_790),
  /** How /restart starts the next gateway (nanobot's key): "exit" leaves it to a service manager; the others start it with the same command line. */
  restartMode: z.enum(["auto", "exec", "spawn", "exit"]).default("auto"),
  /** nanobot's heartbeat: every intervalS the agent reads HEARTBEAT.md and does what is due there. */
  heartbeat: z
    .object({
      enabled: flag.default(true),
      intervalS: z.number().int().min(1).max(MAX_TIMER_SECONDS).default(1800),
      keepRecentMessages: z.number().int().min(0).default(8),
    })
    .prefault({}),
});

/** The store's disk: the free-space early warning and how often a failing store is probed. */
const storageSchema = z.object({
  /** Warn when the free space under the data dir falls below this many MB or this share of the disk, whichever is smaller. */
  freeSpaceFloorMB: nonNegative.default(200),
  freeSpaceFloorPercent: z.number().min(0).max(100).default(5),
  /** A failing store is probed after 1 s, then at doubling waits up to this many seconds. */
  probeMaxSeconds: positive.default(15),
  /**
   * A finished turn's journal (each checkpoint, each tool call's arguments and result) is folded into
   * the summary the inspector shows once the turn is this many days old, or once this many newer
   * turns have finished. The turn's record and the session's messages are kept.
   */
  compactTurnsAfterDays: nonNegative.default(7),
  keepTurnJournals: nonNegativeInt.default(1_000),
});

export const configSchema = z.object({
  agents: z.object({ defaults: agentDefaultsSchema.prefault({}) }).prefault({}),
  providers: z.record(text, providerSchema).default({}),
  channels: channelsSchema.prefault({}),
  gateway: gatewaySchema.prefault({}),
  tools: toolsSchema.prefault({}),
  storage: storageSchema.prefault({}),
  modelPresets: z.record(text, modelPresetSchema).default({}),
});

export type Config = z.infer<typeof configSchema>;
export type AgentDefaults = Config["agents"]["defaults"];

export function defaultConfig(): Config {
  return configSchema.parse({});
}
