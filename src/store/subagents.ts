import { z } from "zod";
import { lazySchema } from "../lazy-schema.js";
import type { ListOptions, Store, StoreOp } from "./store.js";

/** A subagent: a task handed off by a session's turn, run as its own checkpointed turn. */
export const subagentRecordSchema = lazySchema(() => z.object({
  id: z.string(),
  label: z.string(),
  task: z.string(),
  /** The session that spawned it, and the chat its result goes back to. */
  origin: z.object({ sessionKey: z.string(), channel: z.string(), chatId: z.string(), turnId: z.string() }),
  /** wait=true: the result is the spawn tool's result; otherwise it reaches the session's inbox. */
  wait: z.boolean(),
  /** spawn's temperature for this subagent's model calls; none: the configured one. */
  temperature: z.number().optional(),
  status: z.enum(["queued", "running", "responded", "failed", "cancelled", "max_iterations"]),
  turnId: z.string().nullable(),
  result: z.string().nullable(),
  createdAt: z.number(),
  finishedAt: z.number().nullable(),
}));
export type SubagentRecord = z.infer<typeof subagentRecordSchema>;

export const FINISHED = ["responded", "failed", "cancelled", "max_iterations"] as const;
export const isFinished = (r: SubagentRecord) => (FINISHED as readonly string[]).includes(r.status);

/** A subagent's own session: its transcript, shown by `troupe sessions show`. */
export const subagentSessionKey = (id: string) => `subagent:${id}`;
export const subagentIdOf = (sessionKey: string) => (sessionKey.startsWith("subagent:") ? sessionKey.slice("subagent:".length) : undefined);

export const subagentPutOp = (record: SubagentRecord): StoreOp => ({ type: "put", sublevel: "subagents", key: record.id, value: record });

export const getSubagent = (store: Store, id: string) => store.get("subagents", id, subagentRecordSchema);

export async function listSubagents(store: Store, opts: ListOptions = {}): Promise<SubagentRecord[]> {
  return (await store.list("subagents", subagentRecordSchema, opts)).map((r) => r.value).sort((a, b) => a.createdAt - b.createdAt);
}
