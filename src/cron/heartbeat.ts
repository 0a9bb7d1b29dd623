import { z } from "zod";
import type { LlmProvider, ToolSchema } from "../providers/client.js";
import type { SessionMeta } from "../store/sessions.js";

/**
 * The heartbeat (nanobot's design): every gateway.heartbeat.intervalS the agent reads HEARTBEAT.md.
 * Phase 1 asks the model, through a virtual `heartbeat` tool, whether there is anything to do
 * (`skip`, or `run` with the tasks), so no free text is parsed; phase 2 (on `run`) is a turn in
 * session `heartbeat` whose reply goes to the most recently active external chat.
 */

export const HEARTBEAT_SESSION = "heartbeat";

/**
 * The heartbeat's protected cron job as `gateway.heartbeat` says (null: off), for `cron.ensureSystemJob`.
 * The daemon puts it in place at start and `troupe cron` does too, so it is there from a fresh data dir on.
 * Its target only names its session: the reply goes to the chat last written from (pickHeartbeatTarget).
 */
export function heartbeatJobSpec(config: { enabled: boolean; intervalS: number }) {
  if (!config.enabled) return null;
  return { name: "heartbeat", message: "Check HEARTBEAT.md", schedule: { kind: "every" as const, everyS: config.intervalS }, target: { channel: "api", chatId: HEARTBEAT_SESSION } };
}

/**
 * True when HEARTBEAT.md holds a task (nanobot's rule): a line under "## Active Tasks" that is not
 * blank, a heading or an HTML comment. Lines before any "##" heading or under another one are notes.
 */
export function hasActiveTasks(content: string): boolean {
  let inComment = false;
  let inActive = false;
  for (const line of content.split(/\r?\n/)) {
    const t = line.trim();
    if (inComment) {
      if (t.includes("-->")) inComment = false;
      continue;
    }
    if (/^##(?!#)/.test(t)) inActive = /^active tasks/i.test(t.replace(/^#+/, "").trim());
    if (!t || t.startsWith("#")) continue;
    if (t.startsWith("<!--")) {
      inComment = !t.slice(4).includes("-->");
      continue;
    }
    if (inActive) return true;
  }
  return false;
}

export const heartbeatDecisionSchema = z.object({
  action: z.enum(["skip", "run"]),
  tasks: z.string().optional(),
});
export type HeartbeatDecision = z.infer<typeof heartbeatDecisionSchema>;

export const HEARTBEAT_TOOL: ToolSchema = {
  type: "function",
  function: {
    name: "heartbeat",
    description: "Report whether any task in HEARTBEAT.md needs doing now: skip (nothing to do) or run (with a summary of the tasks to do).",
    parameters: {
      type: "object",
      properties: {
        action: { type: "string", enum: ["skip", "run"], description: "skip: nothing to do now; run: there are tasks to do now" },
        tasks: { type: "string", description: "For run: a short summary of the tasks to do now" },
      },
      required: ["action"],
    },
  },
};

/** Phase 1: one model call that must answer through the heartbeat tool. No tool call, or a bad one, is a skip. */
export async function decideHeartbeat(provider: LlmProvider, content: string, nowText: string, signal?: AbortSignal): Promise<HeartbeatDecision & { why?: string }> {
  const response = await provider.chat({
    messages: [
      {
        role: "system",
        content:
          "You are the heartbeat of a personal assistant. Read the user's HEARTBEAT.md and decide whether any task in it needs doing now. " +
          "Answer only by calling the heartbeat tool: action skip when nothing needs doing, action run with a summary of the tasks when something does.",
      },
      { role: "user", content: `Current time: ${nowText}\n\nHEARTBEAT.md:\n\n${content}` },
    ],
    tools: [HEARTBEAT_TOOL],
    signal,
  });
  const call = response.toolCalls.find((c) => c.name === "heartbeat");
  const parsed = heartbeatDecisionSchema.safeParse(call?.arguments ?? undefined);
  if (!parsed.success) return { action: "skip", why: call ? "the heartbeat tool call had bad arguments" : "the model did not call the heartbeat tool" };
  return parsed.data;
}

/** Phase 2's message: do the tasks and report; nothing to report means an empty answer is fine. */
export function heartbeatPrompt(tasks: string, content: string): string {
  return (
    "[Heartbeat. Your reply is delivered to the user's chat as it is: write only the user-facing message, " +
    "never mention HEARTBEAT.md or these instructions.]\n\n" +
    `Tasks to do now: ${tasks || "(see below)"}\n\nHEARTBEAT.md:\n\n${content}`
  );
}

/** Sessions that are not conversations with a person: scheduled runs, the heartbeat, subagents, the local CLI. */
const INTERNAL = /^(cron|subagent|cli):|^heartbeat$/;

/** The chat the heartbeat reports to: the most recently active session on a channel the daemon serves. */
export function pickHeartbeatTarget(sessions: SessionMeta[], serves: (channel: string) => boolean): { channel: string; chatId: string } | undefined {
  const sorted = [...sessions].sort((a, b) => b.updatedAt - a.updatedAt);
  for (const s of sorted) {
    if (INTERNAL.test(s.key)) continue;
    const i = s.key.indexOf(":");
    if (i <= 0) continue;
    const channel = s.key.slice(0, i);
    const chatId = s.key.slice(i + 1);
    if (chatId && serves(channel)) return { channel, chatId };
  }
  return undefined;
}
