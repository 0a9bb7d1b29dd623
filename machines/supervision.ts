import type { SessionMessage } from "./session.machine.js";

/**
 * The supervisor's restart policy, the record it keeps of each child and the children's actor ids:
 * plain values and types (no XState), apart from the machine (supervisor.machine.ts); the daemon's
 * composition, status and control API use them.
 */

export interface SupervisionPolicy {
  maxRestarts: number;
  windowMs: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_POLICY: SupervisionPolicy = { maxRestarts: 5, windowMs: 60_000, baseDelayMs: 500, maxDelayMs: 30_000 };

/** The wait before restart number `attempt` (1-based): base × 2^(attempt-1), capped. */
export const restartDelay = (policy: SupervisionPolicy, attempt: number) =>
  Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1));

export type ChildKind = "session" | "channel" | "cron" | "mcp" | "dream";

export interface ChildRecord {
  id: string;
  kind: ChildKind;
  input: unknown;
  /** parked: it failed while the store was failing; it is started again when the store has recovered. */
  status: "running" | "restarting" | "failed" | "parked";
  /** When it failed, within the intensity window. */
  failures: number[];
  lastError: string | null;
  since: number;
  /** Messages for a session that is waiting to restart. */
  pending: SessionMessage[];
}

export const sessionActorId = (sessionKey: string) => `session:${sessionKey}`;
/** The session key of a session actor's id (the inverse of sessionActorId). */
export const sessionKeyOfActor = (id: string) => id.slice("session:".length);
export const channelActorId = (name: string) => `channel:${name}`;
export const CRON_ACTOR_ID = "cron";
export const DREAM_ACTOR_ID = "dream";
export const mcpServerActorId = (name: string) => `mcp:${name}`;
