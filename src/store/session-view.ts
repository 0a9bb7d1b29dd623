import { allSessionMessages, getSessionMeta, listSessions, sessionMessages, type SessionMeta } from "./sessions.js";
import type { Store } from "./store.js";
import { listSubagents } from "./subagents.js";
import { listOpenTurns, listTurns } from "./turns.js";

export interface TurnSummary {
  turnId: string;
  state: string;
  final: boolean;
  resumes: number;
  createdAt: number;
  updatedAt: number;
}

export interface SessionOverview extends SessionMeta {
  /** Turns stopped mid-way that have not finished yet (they resume when the daemon runs). */
  interrupted: number;
  /** Turns that were resumed after troupe stopped mid-turn. */
  resumed: number;
}

/** Every session with its interrupted and resumed turns: for `troupe sessions list` and GET /api/sessions. */
export async function sessionsOverview(store: Store): Promise<SessionOverview[]> {
  const open = await listOpenTurns(store);
  const resumed = new Map<string, number>();
  for (const t of await listTurns(store)) if (t.resumes > 0) resumed.set(t.sessionKey, (resumed.get(t.sessionKey) ?? 0) + 1);
  return (await listSessions(store)).map((meta) => ({
    ...meta,
    interrupted: open.filter((t) => t.sessionKey === meta.key).length,
    resumed: resumed.get(meta.key) ?? 0,
  }));
}

/**
 * One session's transcript and turn history, or undefined if there is no such session. The
 * transcript is the current epoch's, or with allEpochs those before each /new too; every message
 * says its epoch.
 */
export async function sessionDetail(store: Store, key: string, opts: { allEpochs?: boolean } = {}) {
  const meta = await getSessionMeta(store, key);
  if (!meta) return undefined;
  const messages = opts.allEpochs ? await allSessionMessages(store, key) : (await sessionMessages(store, meta)).map((m) => ({ ...m, epoch: meta.epoch }));
  const turns: TurnSummary[] = (await listTurns(store))
    .filter((t) => t.sessionKey === key)
    .map((t) => ({ turnId: t.turnId, state: t.state, final: t.final, resumes: t.resumes, createdAt: t.createdAt, updatedAt: t.updatedAt }));
  const subagents = (await listSubagents(store))
    .filter((r) => r.origin.sessionKey === key)
    .map((r) => ({ id: r.id, label: r.label, status: r.status, createdAt: r.createdAt, finishedAt: r.finishedAt }));
  return { ...meta, messages: messages.map((m) => ({ ...m.message, turnId: m.turnId, at: m.at, epoch: m.epoch })), turns, subagents };
}
export type SessionDetail = NonNullable<Awaited<ReturnType<typeof sessionDetail>>>;
