import { allSessionMessages, getSessionMeta, listSessions, sessionMessages, type SessionMeta } from "./sessions.js";
import type { CorruptRecord, ListOptions, Store } from "./store.js";
import { listSubagents } from "./subagents.js";
import { getTurnRecord, listOpenTurns, listTurns } from "./turns.js";
import { turnSummaries } from "./turn-summaries.js";

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
  /** How the newest turn ended (responded, failed, cancelled, max_iterations), or where it stands; null before any. */
  lastTurnState: string | null;
}

/** A listing skips corrupt records and names them here, so one bad record never hides the rest. */
const collectCorrupt = (): ListOptions & { corrupt: CorruptRecord[] } => {
  const corrupt: CorruptRecord[] = [];
  return { corrupt, onCorrupt: (r) => corrupt.push(r) };
};

/** Every session with its interrupted and resumed turns: for `troupe sessions list` and GET /api/sessions. */
export async function sessionsOverview(store: Store): Promise<{ sessions: SessionOverview[]; corrupt: CorruptRecord[] }> {
  const { corrupt, ...skip } = collectCorrupt();
  const open = await listOpenTurns(store, undefined, skip);
  // One summary per session (written with a turn's first and final checkpoints), not every turn record ever written.
  const { resumed, last } = await turnSummaries(store, skip);
  const metas = await listSessions(store, skip);
  // Sessions whose turns ran before the summaries existed: their turn records are read, once.
  if (metas.some((m) => m.turns > 0 && !last.has(m.key))) {
    const legacy = new Set(metas.filter((m) => !last.has(m.key)).map((m) => m.key));
    for (const t of await listTurns(store, skip)) {
      if (!legacy.has(t.sessionKey)) continue;
      if (t.resumes > 0) resumed.set(t.sessionKey, (resumed.get(t.sessionKey) ?? 0) + 1);
      if ((last.get(t.sessionKey)?.createdAt ?? -1) <= t.createdAt) last.set(t.sessionKey, t);
    }
  }
  // A summary is written with a turn's first and final checkpoints: an open turn's record says where it stands now.
  for (const [key, summary] of last) {
    if (!open.some((t) => t.turnId === summary.turnId)) continue;
    const record = await getTurnRecord(store, summary.turnId).catch(() => undefined);
    if (record) last.set(key, { ...summary, state: record.state });
  }
  const sessions = metas.map((meta) => ({
    ...meta,
    interrupted: open.filter((t) => t.sessionKey === meta.key).length,
    resumed: resumed.get(meta.key) ?? 0,
    lastTurnState: last.get(meta.key)?.state ?? null,
  }));
  return { sessions, corrupt };
}

/**
 * One session's transcript and turn history, or undefined if there is no such session. The
 * transcript is the current epoch's, or with allEpochs those before each /new too; every message
 * says its epoch.
 */
export async function sessionDetail(store: Store, key: string, opts: { allEpochs?: boolean } = {}) {
  const meta = await getSessionMeta(store, key);
  if (!meta) return undefined;
  const { corrupt, ...skip } = collectCorrupt();
  const messages = opts.allEpochs
    ? await allSessionMessages(store, key, skip)
    : (await sessionMessages(store, meta, meta.epoch, skip)).map((m) => ({ ...m, epoch: meta.epoch }));
  const turns: TurnSummary[] = (await listTurns(store, skip))
    .filter((t) => t.sessionKey === key)
    .map((t) => ({ turnId: t.turnId, state: t.state, final: t.final, resumes: t.resumes, createdAt: t.createdAt, updatedAt: t.updatedAt }));
  const subagents = (await listSubagents(store, skip))
    .filter((r) => r.origin.sessionKey === key)
    .map((r) => ({ id: r.id, label: r.label, status: r.status, createdAt: r.createdAt, finishedAt: r.finishedAt }));
  return { ...meta, messages: messages.map((m) => ({ ...m.message, turnId: m.turnId, at: m.at, epoch: m.epoch })), turns, subagents, corrupt };
}
export type SessionDetail = NonNullable<Awaited<ReturnType<typeof sessionDetail>>>;
