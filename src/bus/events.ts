import { z } from "zod";
import { lazySchema } from "../lazy-schema.js";

/**
 * Every event that crosses the bus, as one zod discriminated union. Events from outside the
 * process (channels, the control API) go through parseEvent, never a cast.
 */

const at = z.number().int().nonnegative();

export const inboundEvent = lazySchema(() => z.object({
  type: z.literal("inbound"),
  channel: z.string().min(1),
  chatId: z.string().min(1),
  senderId: z.string().min(1),
  content: z.string(),
  /** The platform's id for the message; duplicates of one id are dropped by the inbox. */
  messageId: z.string().optional(),
  media: z.array(z.string()).default([]),
  /** Overrides the default `channel:chatId` session key. */
  sessionKey: z.string().optional(),
  at,
}));

export const outboundEvent = lazySchema(() => z.object({
  type: z.literal("outbound"),
  channel: z.string().min(1),
  chatId: z.string().min(1),
  content: z.string(),
  media: z.array(z.string()).default([]),
  replyTo: z.string().optional(),
  /** Ids of the inbound messages this answers. */
  answers: z.array(z.string()).default([]),
  /** Stable id so a retried delivery can be recognised. */
  deliveryId: z.string().min(1),
  /**
   * A reply on a channel that answers every message (the control API) after the `message` tool
   * already wrote to the chat in the same turn: a client that shows those messages need not show it.
   */
  alreadySent: z.boolean().optional(),
  at,
}));

export const progressEvent = lazySchema(() => z.object({
  type: z.literal("progress"),
  sessionKey: z.string(),
  turnId: z.string(),
  /** A streamed piece of the reply. */
  delta: z.string(),
  at,
}));

export const toolHintEvent = lazySchema(() => z.object({
  type: z.literal("tool_hint"),
  sessionKey: z.string(),
  turnId: z.string(),
  tool: z.string(),
  hint: z.string(),
  at,
}));

/** The text a model response gave with its tool calls ("Let me look at the tests."), think blocks removed: nanobot's progress message. */
export const thoughtEvent = lazySchema(() => z.object({
  type: z.literal("thought"),
  sessionKey: z.string(),
  turnId: z.string(),
  text: z.string(),
  at,
}));

/** A model call failed and is retried after a backoff. */
export const modelRetryEvent = lazySchema(() => z.object({
  type: z.literal("model_retry"),
  sessionKey: z.string(),
  turnId: z.string(),
  attempt: z.number().int().positive(),
  delayMs: z.number().nonnegative(),
  status: z.number().int().nullable(),
  at,
}));

/** A model failed for good and the next fallback model (agents.defaults.fallbackModels) takes over. */
export const modelFallbackEvent = lazySchema(() => z.object({
  type: z.literal("model_fallback"),
  sessionKey: z.string(),
  turnId: z.string(),
  /** "<provider>/<model>" of the model that failed, and of the one tried next. */
  from: z.string(),
  to: z.string(),
  error: z.string(),
  at,
}));

export const turnStateEvent = lazySchema(() => z.object({
  type: z.literal("turn_state"),
  sessionKey: z.string(),
  turnId: z.string(),
  state: z.string(),
  iteration: z.number().int().nonnegative(),
  at,
}));

const actorFields = {
  /** Readable and unique: session:<key>, turn:<session>:<turnId>, subagent:<id>, … */
  actorId: z.string(),
  parentId: z.string().nullable(),
  kind: z.string(),
  machine: z.string().nullable(),
  state: z.string().nullable(),
  at,
};

export const actorEvent = lazySchema(() => z.object({ type: z.enum(["actor_spawned", "actor_stopped"]), ...actorFields }));

/** A state change: from which state, on which event, and the snapshot after it (redacted: no secrets, long contents cut). */
export const actorStateEvent = lazySchema(() => z.object({
  type: z.literal("actor_state"),
  ...actorFields,
  from: z.string().optional(),
  event: z.string().nullable().optional(),
  snapshot: z.object({ status: z.string().nullable(), context: z.unknown() }).nullable().optional(),
  error: z.string().nullable().optional(),
}));

/** An event an actor's machine received, and which actor sent it. */
export const actorEventEvent = lazySchema(() => z.object({ type: z.literal("actor_event"), ...actorFields, event: z.string(), source: z.string().nullable() }));

/**
 * Nobody watched the actors (no /api/events client) from `from` until `at`: their changes in between
 * were not recorded, so a replay across that time is incomplete. The `tree` that follows a replay is
 * the truth as it is now.
 */
export const actorGapEvent = lazySchema(() => z.object({ type: z.literal("actor_gap"), from: at, at }));

export const busEvent = lazySchema(() => z.discriminatedUnion("type", [
  inboundEvent,
  outboundEvent,
  progressEvent,
  toolHintEvent,
  thoughtEvent,
  turnStateEvent,
  modelRetryEvent,
  modelFallbackEvent,
  actorEvent,
  actorStateEvent,
  actorEventEvent,
  actorGapEvent,
]));

export type BusEvent = z.infer<typeof busEvent>;
export type BusEventType = BusEvent["type"];
export type EventOf<T extends BusEventType> = Extract<BusEvent, { type: T }>;
export type InboundEvent = z.infer<typeof inboundEvent>;
export type OutboundEvent = z.infer<typeof outboundEvent>;

export type ParseResult = { ok: true; event: BusEvent } | { ok: false; error: string };

/** Parses untrusted input into an event, or says what is wrong with it. */
export function parseEvent(input: unknown): ParseResult {
  const result = busEvent.safeParse(input);
  if (result.success) return { ok: true, event: result.data };
  const issue = result.error.issues[0];
  const path = issue?.path.map(String).join(".") || "(event)";
  return { ok: false, error: `${path}: ${issue?.message ?? "invalid event"}` };
}
