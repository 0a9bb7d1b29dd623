import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import type { StartedRun } from "../src/cron/fire.js";
import { finishRunOps } from "../src/cron/fire.js";
import { decideHeartbeat, HEARTBEAT_SESSION, hasActiveTasks, heartbeatPrompt } from "../src/cron/heartbeat.js";
import { getJob, putRunOp, runMessageId } from "../src/cron/jobs.js";
import { formatInTz } from "../src/cron/schedule.js";
import type { LlmProvider } from "../src/providers/client.js";
import { inboxPutOps, type InboxRecord } from "../src/store/inbox.js";
import { appendMessagesOps, getSessionMeta, newEpochOps, sessionMessages } from "../src/store/sessions.js";
import type { Store, StoreOp } from "../src/store/store.js";

export interface HeartbeatDeps {
  store: Store;
  provider: LlmProvider;
  workspace: string;
  timezone: string;
  /** gateway.heartbeat.keepRecentMessages: the heartbeat session keeps only this many messages. */
  keepRecent: number;
  /** The most recently active external chat (where a heartbeat reports), if any. */
  target(): Promise<{ channel: string; chatId: string } | undefined>;
  /** Hands phase 2's message (already in the inbox) to its session. */
  deliver(inbox: InboxRecord): void;
  logger?: Logger;
  now?: () => number;
}

/**
 * Carries out one heartbeat run (its run record is already written). Phase 1 is a model call with no
 * side effect, so a run interrupted in it is simply decided again at the next start; phase 2's message
 * goes to the inbox (synced, with the run's update) before its turn starts, as any other run.
 */
export function createHeartbeat(deps: HeartbeatDeps) {
  const now = deps.now ?? Date.now;
  const finish = async (s: StartedRun, status: "skipped" | "error", note: string) => {
    const job = await getJob(deps.store, s.job.id);
    await deps.store.batch(finishRunOps(job, s.run, status, null, now(), note), { sync: true });
    deps.logger?.info({ jobId: s.job.id, status, note }, "heartbeat run ended");
  };

  /** The heartbeat session cut to its last keepRecent messages (a new epoch holding them). */
  async function trimOps(): Promise<StoreOp[]> {
    const meta = await getSessionMeta(deps.store, HEARTBEAT_SESSION);
    if (!meta) return [];
    const messages = await sessionMessages(deps.store, meta);
    if (messages.length <= deps.keepRecent) return [];
    let keep = messages.slice(-deps.keepRecent);
    // The kept tail starts at a user message, so no tool result is left without its call.
    const firstUser = keep.findIndex((m) => m.message.role === "user");
    keep = firstUser < 0 ? [] : keep.slice(firstUser);
    const fresh = newEpochOps(meta, now());
    const ops: StoreOp[] = [...fresh.ops];
    let current = fresh.meta;
    for (const m of keep) {
      const appended = appendMessagesOps(current, [m.message], m.turnId, m.at, undefined, false, () => Boolean(m.shownOnly));
      ops.push(...appended.ops);
      current = appended.meta;
    }
    // The meta written last is the one with every kept message counted.
    return [...ops.filter((op) => !(op.type === "put" && op.key.startsWith("meta:"))), ...appendMessagesOps(current, [], null, now()).ops];
  }

  async function run(s: StartedRun): Promise<void> {
    try {
      let content: string;
      try {
        content = await readFile(join(deps.workspace, "HEARTBEAT.md"), "utf8");
      } catch {
        return await finish(s, "skipped", "no HEARTBEAT.md in the workspace");
      }
      if (!hasActiveTasks(content)) return await finish(s, "skipped", "HEARTBEAT.md has no tasks");
      const decision = await decideHeartbeat(deps.provider, content, `${formatInTz(now(), deps.timezone)} ${deps.timezone}`);
      if (decision.action === "skip") return await finish(s, "skipped", decision.why ?? "nothing to do now");
      const target = await deps.target();
      if (!target) return await finish(s, "skipped", "no chat to report to yet (nobody has written to troupe)");
      const id = runMessageId(s.job.id, s.run.scheduledAt);
      const inbox: InboxRecord = {
        id,
        sessionKey: HEARTBEAT_SESSION,
        channel: target.channel,
        chatId: target.chatId,
        senderId: "heartbeat",
        content: heartbeatPrompt(decision.tasks ?? "", content),
        media: [],
        at: now(),
      };
      await deps.store.batch([...(await trimOps()), putRunOp({ ...s.run, messageId: id, note: decision.tasks ?? null }), ...inboxPutOps(inbox)], { sync: true });
      deps.logger?.info({ tasks: decision.tasks, to: target }, "heartbeat: tasks to do");
      deps.deliver(inbox);
    } catch (err) {
      deps.logger?.error({ err }, "heartbeat run failed");
      await finish(s, "error", err instanceof Error ? err.message : String(err)).catch((e: unknown) => deps.logger?.error({ err: e }, "could not record the heartbeat's failure"));
    }
  }
  return { run };
}
