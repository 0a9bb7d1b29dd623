import { createHash } from "node:crypto";
import type { Logger } from "pino";
import type { Bus } from "../src/bus/index.js";
import type { Config } from "../src/config/schema.js";
import { subagentResultMessage, subagentSystemPrompt } from "../src/context/subagent-prompt.js";
import type { Limiter, Release } from "../src/limiter.js";
import type { LlmProvider } from "../src/providers/client.js";
import { inboxPutOps, type InboxRecord } from "../src/store/inbox.js";
import { appendMessagesOps, getSessionMeta, newSessionMeta } from "../src/store/sessions.js";
import type { Store, StoreOp } from "../src/store/store.js";
import {
  getSubagent,
  isFinished,
  listSubagents,
  subagentIdOf,
  subagentPutOp,
  subagentSessionKey,
  type SubagentRecord,
} from "../src/store/subagents.js";
import { getTurn, type TurnRecord } from "../src/store/turns.js";
import { ToolError } from "../src/tools/contract.js";
import type { SubagentControl } from "../src/tools/builtin/spawn.js";
import type { ToolRegistry } from "../src/tools/registry.js";
import { newTurnId } from "./conversation.js";
import { inputBudget } from "../src/memory/tokens.js";
import { startTurn, type TurnDeps, type TurnHandle, type TurnResult } from "./turn.js";

export interface SubagentPoolDeps {
  config: Config;
  store: Store;
  provider: LlmProvider;
  /** The subagents' tools: files, search, exec, web; never message or spawn (depth 1). */
  registry: ToolRegistry;
  workspace: string;
  limiter: Limiter;
  bus?: Bus;
  logger?: Logger;
  now?: () => number;
  /** Follows each subagent's turn in the actor tree. */
  follow?: TurnDeps["follow"];
  /** Hands a finished subagent's report (already in the origin session's inbox) to that session. */
  deliver(result: InboxRecord): void;
}

export interface SubagentPool extends SubagentControl {
  /** Cancels every subagent of a session (/stop); returns how many. */
  cancelAll(originSessionKey: string): Promise<number>;
  /** Queued and running subagents, for the actor tree. */
  active(): Array<{ record: SubagentRecord; phase: string; since: number }>;
  /** At start: queued subagents run, interrupted ones resume from their checkpoint. */
  recover(): Promise<number>;
  /** Shutdown: running subagents stop at their last checkpoint. */
  stop(): Promise<void>;
}

/** Subagent ids come from the spawn call's idempotency key, so a repeated call finds its subagent. */
const idFor = (key: string) => `sa-${createHash("sha256").update(key).digest("hex").slice(0, 10)}`;

/**
 * The subagent pool: each subagent is a turn machine actor with its own prompt, tools and
 * checkpoints, at most agents.defaults.maxConcurrentSubagents at once (the rest queue, up to four
 * times that). A report goes to the origin session's inbox in the subagent's final atomic batch, so
 * it is announced exactly once, even across a kill -9.
 */
export function createSubagentPool(deps: SubagentPoolDeps): SubagentPool {
  const now = deps.now ?? Date.now;
  const d = deps.config.agents.defaults;
  const maxQueued = d.maxConcurrentSubagents * 4;
  const maxIterations = d.maxSubagentIterations ?? d.maxToolIterations;
  const running = new Map<string, TurnHandle>();
  const queued = new Map<string, AbortController>();
  const live = new Map<string, { record: SubagentRecord; phase: string; since: number }>();
  const waiters = new Map<string, Array<(r: SubagentRecord) => void>>();
  const baseDeps = { store: deps.store, provider: deps.provider, registry: deps.registry, workspace: deps.workspace, bus: deps.bus, logger: deps.logger, now, contextBudget: inputBudget(d.contextWindowTokens, d.maxTokens), follow: deps.follow };

  /** A subagent spawned with a temperature makes every model call (resumed ones too) with it. */
  const turnDepsFor = (record: SubagentRecord): TurnDeps => {
    const { temperature } = record;
    if (temperature === undefined) return baseDeps;
    const provider = deps.provider;
    return { ...baseDeps, provider: { name: provider.name, model: provider.model, chat: (req) => provider.chat({ ...req, temperature }) } };
  };

  deps.bus?.ofType("turn_state").subscribe((e) => {
    const id = subagentIdOf(e.sessionKey);
    const entry = id ? live.get(id) : undefined;
    if (entry) Object.assign(entry, { phase: e.state, since: e.at });
  });

  const resultRecord = (r: SubagentRecord): InboxRecord => ({
    id: `subagent:${r.id}:result`,
    sessionKey: r.origin.sessionKey,
    channel: r.origin.channel,
    chatId: r.origin.chatId,
    senderId: "subagent",
    content: subagentResultMessage({ id: r.id, label: r.label, task: r.task, status: r.status, result: r.result ?? "" }),
    media: [],
    at: r.finishedAt ?? now(),
  });

  const settle = (record: SubagentRecord) => {
    live.delete(record.id);
    deps.logger?.info(
      { subagent: record.id, sessionKey: record.origin.sessionKey, status: record.status, durationMs: (record.finishedAt ?? now()) - record.createdAt },
      "subagent finished",
    );
    for (const resolve of waiters.get(record.id) ?? []) resolve(record);
    waiters.delete(record.id);
    if (!record.wait && record.status !== "cancelled") deps.deliver(resultRecord(record));
  };

  /** The final batch: the transcript, the finished record and (unless someone waits on it) the report in the origin inbox. */
  const finalOps = (record: SubagentRecord, done: (r: SubagentRecord) => void) => async (result: TurnResult): Promise<StoreOp[]> => {
    const key = subagentSessionKey(record.id);
    const meta = (await getSessionMeta(deps.store, key)) ?? newSessionMeta(key, now());
    const finished: SubagentRecord = { ...record, status: result.state, result: result.output.reply, finishedAt: now() };
    done(finished);
    const report = !finished.wait && finished.status !== "cancelled" ? inboxPutOps(resultRecord(finished)) : [];
    return [...appendMessagesOps(meta, result.output.newMessages, result.turnId, now(), result.output.usage, true).ops, subagentPutOp(finished), ...report];
  };

  async function run(record: SubagentRecord, resumeFrom?: TurnRecord, slot?: Release): Promise<void> {
    let release: Release;
    if (slot) release = slot;
    else {
      const giveUp = new AbortController();
      queued.set(record.id, giveUp);
      live.set(record.id, { record, phase: "queued", since: now() });
      try {
        release = await deps.limiter.acquire(giveUp.signal);
      } catch {
        return; // cancelled while queued: cancel() wrote the record
      } finally {
        queued.delete(record.id);
      }
    }
    let finished: SubagentRecord | undefined;
    // Before the turn starts: its first state event arrives while it starts.
    live.set(record.id, { record: { ...record, status: "running" }, phase: "starting", since: now() });
    try {
      let turn: TurnHandle;
      if (resumeFrom) {
        deps.logger?.info({ subagent: record.id, state: resumeFrom.state }, "resuming an interrupted subagent");
        turn = startTurn(turnDepsFor(record), { record: resumeFrom }, finalOps(record, (r) => (finished = r)));
      } else {
        const turnId = newTurnId(now());
        const key = subagentSessionKey(record.id);
        const started: SubagentRecord = { ...record, status: "running", turnId };
        const system = subagentSystemPrompt({ workspace: deps.workspace, label: record.label, restrictToWorkspace: deps.config.tools.restrictToWorkspace, maxIterations });
        turn = startTurn(
          turnDepsFor(record),
          {
            input: {
              turnId,
              sessionKey: key,
              channel: record.origin.channel,
              chatId: record.origin.chatId,
              messages: [{ role: "system", content: system }, { role: "user", content: record.task }],
              maxIterations,
            },
            initialOps: [subagentPutOp(started), ...appendMessagesOps(newSessionMeta(key, now()), [{ role: "user", content: record.task }], turnId, now()).ops],
          },
          finalOps(started, (r) => (finished = r)),
        );
      }
      running.set(record.id, turn);
      await turn.done;
      if (finished) settle(finished);
    } catch (err) {
      deps.logger?.error({ err, subagent: record.id }, "subagent stopped");
      // Not finished: it resumes from its last checkpoint at the next start, or when the store recovers.
      live.delete(record.id);
    } finally {
      running.delete(record.id);
      release();
    }
  }

  return {
    async spawn({ key, task, label, wait, temperature, origin }) {
      const id = idFor(key);
      const existing = await getSubagent(deps.store, id);
      if (existing) return { record: existing, existing: true };
      if (queued.size >= maxQueued) {
        throw new ToolError(`too many subagents waiting (${queued.size}, limit ${maxQueued}); wait for some to finish or cancel one with the subagents tool`);
      }
      const record: SubagentRecord = { id, label, task, origin, wait, ...(temperature === undefined ? {} : { temperature }), status: "queued", turnId: null, result: null, createdAt: now(), finishedAt: null };
      await deps.store.batch([subagentPutOp(record)], { sync: true });
      // A free slot is taken now, so the model is told the truth: running, not queued.
      const slot = deps.limiter.tryAcquire();
      deps.logger?.info({ subagent: id, sessionKey: origin.sessionKey, label, queued: !slot }, "subagent spawned");
      void run(record, undefined, slot);
      return { record: slot ? { ...record, status: "running" } : record, existing: false };
    },
    async wait(id, signal) {
      // The waiter is registered before the store is read: a subagent that finishes in between is not missed.
      let resolveWait!: (r: SubagentRecord) => void;
      const finished = new Promise<SubagentRecord>((resolve, reject) => {
        resolveWait = resolve;
        signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
      waiters.set(id, [...(waiters.get(id) ?? []), resolveWait]);
      const drop = () => waiters.set(id, (waiters.get(id) ?? []).filter((w) => w !== resolveWait));
      const record = await getSubagent(deps.store, id);
      if (!record || isFinished(record)) {
        drop();
        if (!record) throw new ToolError(`no subagent ${id}`);
        return record;
      }
      return finished.finally(drop);
    },
    async list(originSessionKey) {
      return (await listSubagents(deps.store)).filter((r) => r.origin.sessionKey === originSessionKey);
    },
    phase: (id) => live.get(id)?.phase,
    async cancel(id, originSessionKey) {
      const record = await getSubagent(deps.store, id);
      if (!record || record.origin.sessionKey !== originSessionKey || isFinished(record)) return false;
      const turn = running.get(id);
      if (turn) {
        turn.cancel();
        return true;
      }
      const waiting = queued.get(id);
      if (!waiting) return false;
      waiting.abort();
      const cancelled: SubagentRecord = { ...record, status: "cancelled", finishedAt: now() };
      await deps.store.batch([subagentPutOp(cancelled)], { sync: true });
      settle(cancelled);
      return true;
    },
    async cancelAll(originSessionKey) {
      const mine = [...live.values()].filter((e) => e.record.origin.sessionKey === originSessionKey);
      const results = await Promise.all(mine.map((e) => this.cancel(e.record.id, originSessionKey)));
      return results.filter(Boolean).length;
    },
    active: () => [...live.values()],
    async recover() {
      // Those running here already (recovery after a store failure) are left to run.
      const unfinished = (await listSubagents(deps.store)).filter((r) => !isFinished(r) && !live.has(r.id) && !running.has(r.id));
      for (const record of unfinished) {
        const turn = record.turnId ? await getTurn(deps.store, record.turnId) : undefined;
        void run(record, turn && !turn.final ? turn : undefined);
      }
      return unfinished.length;
    },
    async stop() {
      queued.forEach((c) => c.abort());
      await Promise.all([...running.values()].map((t) => t.stop()));
    },
  };
}
