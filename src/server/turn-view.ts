import { INTERRUPTED_RESULT } from "../../actors/run-tools.js";
import { compactedView } from "../store/compact.js";
import type { Store } from "../store/store.js";
import { getTurnRecord } from "../store/turns.js";
import { stateJournal, toolJournal } from "../store/turn-journal.js";

export interface Checkpoint {
  seq: number;
  state: string;
  iteration: number;
  at: number;
  /** How long the turn stayed in this state (until the next checkpoint); null for the last one. */
  durationMs: number | null;
  /** Tokens the turn had used by then, and the tokens this state added (the model call's, for awaiting_model). */
  tokens: number | null;
  tokensAdded: number | null;
}

export interface ToolCallView {
  iteration: number | null;
  index: number | null;
  name: string;
  status: "started" | "completed" | "interrupted";
  startedAt: number | null;
  completedAt: number | null;
  durationMs: number | null;
  /** A short, redacted hint of the arguments; never the arguments themselves. */
  hint: string;
  resultPreview: string | null;
}

const cut = (text: string, n: number) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);

/**
 * One turn as the inspector shows it: its checkpoints (seq, state, time, duration, tokens) and its
 * tool journal. Nothing here carries a tool's full arguments or result.
 */
export async function turnDetail(store: Store, turnId: string, redact: (text: string) => string) {
  // A compacted turn's journal is gone; its view was kept when it went.
  const compacted = await compactedView(store, turnId);
  if (compacted) return compacted as Awaited<ReturnType<typeof journalView>>;
  return journalView(store, turnId, redact);
}

/** The view computed from the turn's record and its journal. */
async function journalView(store: Store, turnId: string, redact: (text: string) => string) {
  const record = await getTurnRecord(store, turnId);
  if (!record) return undefined;
  const states = await stateJournal(store, turnId);
  const checkpoints: Checkpoint[] = states.map((s, i) => {
    const next = states[i + 1];
    const tokens = s.tokens ?? null;
    const nextTokens = next?.tokens ?? null;
    return {
      seq: s.seq,
      state: s.state,
      iteration: s.iteration,
      at: s.at,
      durationMs: next ? next.at - s.at : null,
      tokens,
      tokensAdded: tokens !== null && nextTokens !== null ? nextTokens - tokens : null,
    };
  });
  const tools: ToolCallView[] = [...(await toolJournal(store, turnId)).values()].map((t) => {
    const interrupted = (t.status === "completed" && t.result === INTERRUPTED_RESULT) || (t.status === "started" && record.final);
    const first = t.args && typeof t.args === "object" ? Object.values(t.args as Record<string, unknown>)[0] : undefined;
    const startedAt = t.status === "started" ? t.at : (t.startedAt ?? null);
    const completedAt = t.status === "completed" ? t.at : null;
    return {
      iteration: t.iteration ?? null,
      index: t.index ?? null,
      name: t.name,
      status: interrupted ? "interrupted" : t.status,
      startedAt,
      completedAt,
      durationMs: startedAt !== null && completedAt !== null ? completedAt - startedAt : null,
      hint: cut(redact(typeof first === "string" ? first : first === undefined ? "" : JSON.stringify(first)), 60),
      resultPreview: t.result === undefined ? null : cut(redact(t.result), 200),
    };
  });
  const context = (record.snapshot as { context?: { usage?: unknown; iteration?: unknown; error?: unknown; models?: unknown } }).context ?? {};
  return {
    turnId,
    sessionKey: record.sessionKey,
    state: record.state,
    final: record.final,
    seq: record.seq,
    resumes: record.resumes,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
    iteration: context.iteration ?? null,
    usage: context.usage ?? null,
    /** Which models answered ("<provider>/<model>"): a fallback model shows here. */
    models: Array.isArray(context.models) ? context.models.filter((m): m is string => typeof m === "string") : [],
    error: typeof context.error === "string" ? redact(context.error) : null,
    checkpoints,
    tools,
  };
}
