import { z } from "zod";
import { lazySchema } from "../../lazy-schema.js";
import type { SubagentRecord } from "../../store/subagents.js";
import { defineTool, ToolError, type ToolContext } from "../contract.js";

/** What the spawn and subagents tools need from the subagent pool (supplied by the daemon). */
export interface SubagentControl {
  /** Starts (or queues) a subagent; the same key returns the subagent it already started. */
  spawn(req: { key: string; task: string; label: string; wait: boolean; temperature?: number; origin: SubagentRecord["origin"] }): Promise<{ record: SubagentRecord; existing: boolean }>;
  /** Resolves once the subagent has finished. */
  wait(id: string, signal: AbortSignal): Promise<SubagentRecord>;
  list(originSessionKey: string): Promise<SubagentRecord[]>;
  /** Cancels one of the session's subagents; false when there is no such running or queued subagent. */
  cancel(id: string, originSessionKey: string): Promise<boolean>;
  /** The current phase of a running subagent (its turn state). */
  phase(id: string): string | undefined;
}

const originOf = (ctx: ToolContext): SubagentRecord["origin"] => ({
  sessionKey: ctx.sessionKey,
  channel: ctx.channel ?? "cli",
  chatId: ctx.chatId ?? "direct",
  turnId: ctx.turnId,
});

const TEMPERATURE_RANGE = "must be between 0 and 2 (0 = deterministic, higher = more varied); leave it out for the configured temperature";

export function spawnTool(control: SubagentControl) {
  return defineTool({
    name: "spawn",
    description:
      "Hand a self-contained task to a subagent that works in parallel with its own tools (files, search, exec, web). " +
      "By default it returns at once and the subagent's report arrives later as a message; wait=true waits and returns the report. " +
      "Give the task everything it needs: the subagent does not see this conversation.",
    parameters: lazySchema(() => z.object({
      task: z.string().min(1).describe("The complete task, with all the context it needs"),
      label: z.string().min(1).max(60).optional().describe("A short name for the task"),
      wait: z.boolean().default(false).describe("Wait for the result instead of returning at once"),
      temperature: z
        .number()
        .min(0, TEMPERATURE_RANGE)
        .max(2, TEMPERATURE_RANGE)
        .optional()
        .describe("Sampling temperature for the subagent (0 = deterministic, higher = more varied); the configured one when left out"),
    })),
    // Keyed by the call's idempotency key: a call repeated after a crash finds the subagent it started.
    idempotent: true,
    async execute({ task, label, wait, temperature }, ctx) {
      const name = label ?? task.slice(0, 40);
      const { record, existing } = await control.spawn({ key: ctx.idempotencyKey, task, label: name, wait, temperature, origin: originOf(ctx) });
      if (!wait) {
        const queued = record.status === "queued" ? " It is queued until a subagent slot frees up." : "";
        return `Subagent [${record.label}] ${existing ? "was already started" : "started"} (id: ${record.id}).${queued} Its report will arrive as a message when it finishes.`;
      }
      const done = await control.wait(record.id, ctx.signal);
      return `Subagent [${done.label}] (${done.id}) finished: ${done.status}.\n\n${done.result ?? "(no report)"}`;
    },
  });
}

export function subagentsTool(control: SubagentControl) {
  return defineTool({
    name: "subagents",
    description: "List this session's subagents with their status and phase, or cancel one by id.",
    parameters: lazySchema(() => z.object({
      action: z.enum(["list", "cancel"]).default("list"),
      id: z.string().optional().describe("The subagent to cancel"),
    })),
    async execute({ action, id }, ctx) {
      if (action === "cancel") {
        if (!id) throw new ToolError("cancel needs the id of a subagent (see action=list)");
        if (!(await control.cancel(id, ctx.sessionKey))) throw new ToolError(`no running or queued subagent ${id} in this session`);
        return `Subagent ${id} cancelled.`;
      }
      const all = await control.list(ctx.sessionKey);
      if (all.length === 0) return "No subagents in this session.";
      return all
        .map((r) => {
          const phase = r.status === "running" ? ` (${control.phase(r.id) ?? "starting"})` : "";
          return `- ${r.id} [${r.label}] ${r.status}${phase}: ${r.task.length > 80 ? `${r.task.slice(0, 77)}...` : r.task}`;
        })
        .join("\n");
    },
  });
}
