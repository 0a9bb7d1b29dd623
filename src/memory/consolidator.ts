import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import { TEMPLATES_DIR } from "../context/templates.js";
import { fault } from "../fault.js";
import type { LlmProvider } from "../providers/client.js";
import type { ChatMessage } from "../providers/messages.js";
import { getSessionMeta, sessionMessagesInRange, sessionMessagesWithSeq, withSeq, type SessionMeta, type StoredMessage } from "../store/sessions.js";
import type { Store } from "../store/store.js";
import { archivedUpTo, cut, formatMessages, pickBoundary, tailChunks, type Chunk } from "./archive-chunks.js";
import type { MemoryFiles } from "./files.js";
import { consolidationStateOp, getConsolidationState, type ConsolidationState } from "./session-state.js";
import { ARCHIVED, release, tokenSums, unarchived, type KeptMessage } from "./kept-messages.js";
import { idleArchiveCount, isIdle } from "./idle-compact.js";
import { forgetSideData } from "./side-data.js";
import { textTokens, type TokenCost } from "./tokens.js";

/** nanobot's limit: rounds per consolidation. */
export const MAX_ROUNDS = 5;
/** A raw dump (the summary call failed) and a summary are cut to these. */
export const RAW_ARCHIVE_MAX_CHARS = 16_000;
export const SUMMARY_MAX_CHARS = 8_000;

export interface ConsolidatorDeps {
  store: Store;
  provider: LlmProvider;
  files: MemoryFiles;
  /** Tokens a request may take (window − reply − buffer). */
  budget: number;
  /** What every request of the session carries besides its history: its system prompt and the tool schemas (counted lazily as a TokenCost). */
  fixedTokens: (sessionKey: string) => Promise<TokenCost>;
  timezone?: string;
  logger?: Logger;
  /** A session whose last message is this many minutes old is compacted before its next turn (idleCompact); 0 or unset: never. */
  idleCompactAfterMinutes?: number;
  now?: () => number;
}

export interface SessionView {
  meta: SessionMeta;
  state: ConsolidationState;
  /** With their seq: a turn's stored input names the range of them it was given. */
  messages: KeptMessage[];
}

/** A shown-only message (a failure notice the user saw) costs nothing but moves with its turn. */
const SHOWN_ONLY: ChatMessage = { role: "assistant", content: "" };
const forBoundary = (m: StoredMessage): ChatMessage => (m.shownOnly ? SHOWN_ONLY : m.message);

let template: Promise<string> | undefined;
const archiveTemplate = () => (template ??= readFile(join(TEMPLATES_DIR, "prompts", "consolidator-archive.md"), "utf8"));

/**
 * nanobot's Consolidator, durable: when a session's estimated prompt reaches the budget, its oldest
 * messages are archived (summarised by the model into history.jsonl, or dumped raw with a [RAW]
 * marker when that fails) down to half the budget. Each history entry records the session and the
 * message range it archived, and is synced before the session's `lastConsolidated` moves; a crash
 * between the two is repaired from the entry (reconcile), so a range is never lost nor archived twice.
 */
export function createConsolidator(deps: ConsolidatorDeps) {
  const locks = new Map<string, Promise<unknown>>();
  const locked = <T>(key: string, fn: () => Promise<T>): Promise<T> => {
    const next = (locks.get(key) ?? Promise.resolve()).then(fn, fn);
    const tail = next.catch(() => undefined);
    locks.set(key, tail);
    void tail.then(() => locks.get(key) === tail && locks.delete(key));
    return next;
  };

  /**
   * Each session's messages as last read, kept while its actor lives (`forget` when it ends): a
   * session's stored messages are only ever appended to (a new epoch or a deleted session starts
   * over), so a turn reads what was appended since, not the whole history again.
   */
  const known = new Map<string, { epoch: number; createdAt: number; messages: SessionView["messages"] }>();
  let archivedChunks = 0;

  async function messagesOf(meta: SessionMeta): Promise<{ messages: SessionView["messages"]; fresh: boolean }> {
    const cached = known.get(meta.key);
    if (cached && cached.epoch === meta.epoch && cached.createdAt === meta.createdAt && cached.messages.length <= meta.nextSeq) {
      const from = cached.messages.length;
      const added = await sessionMessagesInRange(deps.store, meta.key, meta.epoch, from, meta.nextSeq);
      // Appended in place (the array only grows, as the store does): a turn costs what it added, not the history again.
      if (added.length === meta.nextSeq - from && cached.messages.length === from) {
        added.forEach((m, i) => cached.messages.push(withSeq(m, from + i)));
        return { messages: cached.messages, fresh: false };
      }
    }
    const messages = await sessionMessagesWithSeq(deps.store, meta);
    // Kept only when seq and position agree (as appending makes them), so a read of the new tail continues it.
    if (messages.every((m, i) => m.seq === i)) known.set(meta.key, { epoch: meta.epoch, createdAt: meta.createdAt, messages });
    else known.delete(meta.key);
    return { messages, fresh: true };
  }

  /** The session, its messages and how many are archived, repaired from history.jsonl after a crash. */
  async function view(sessionKey: string): Promise<SessionView | undefined> {
    const meta = await getSessionMeta(deps.store, sessionKey);
    if (!meta) {
      known.delete(sessionKey);
      return undefined;
    }
    const { messages, fresh } = await messagesOf(meta);
    let state = await getConsolidationState(deps.store, meta);
    // Kept messages let go past what the store now says is archived (it never moves back, but if it did): read afresh.
    if (!fresh && messages[state.lastConsolidated] === ARCHIVED) {
      known.delete(sessionKey);
      return view(sessionKey);
    }
    // An archive interrupted by a crash (or a failed write: see archive) is caught up on the first read of the session.
    const written = fresh ? archivedUpTo(await deps.files.readHistory(), meta) : 0;
    if (written > state.lastConsolidated) {
      deps.logger?.info({ sessionKey, from: state.lastConsolidated, to: written }, "consolidation was interrupted after its history entry; catching up");
      state = { ...state, lastConsolidated: written };
      await deps.store.batch([consolidationStateOp(sessionKey, state)], { sync: true });
    }
    state = { ...state, lastConsolidated: Math.min(state.lastConsolidated, messages.length) };
    release(messages, state.lastConsolidated);
    return { meta, state, messages };
  }

  const fixedExact = async (sessionKey: string) => (await deps.fixedTokens(sessionKey)).exact();

  async function estimate(v: SessionView): Promise<number> {
    return (await fixedExact(v.meta.key)) + tokenSums(v.messages).exact(v.state.lastConsolidated, v.messages.length);
  }

  /** At least estimate(v), without the tokenizer (UTF-8 bytes bound tokens). */
  async function estimateBound(v: SessionView): Promise<number> {
    return (await deps.fixedTokens(v.meta.key)).bound + tokenSums(v.messages).bound(v.state.lastConsolidated, v.messages.length);
  }

  /** The summary of a chunk, or undefined when the model could not give one (the raw dump is used). */
  async function summarise(chunk: StoredMessage[]): Promise<string | undefined> {
    const system = (await archiveTemplate()).replaceAll("{{count}}", String(chunk.length));
    let text = formatMessages(chunk, deps.timezone);
    const room = deps.budget - textTokens(system) - 64;
    if (room <= 0) return undefined;
    if (textTokens(text) > room) text = formatMessages(chunk, deps.timezone, 300);
    if (textTokens(text) > room) return undefined;
    try {
      const r = await deps.provider.chat({ messages: [{ role: "system", content: system }, { role: "user", content: text }], tools: [] });
      if (r.toolCalls.length || r.finishReason === "length" || !r.content.trim()) return undefined;
      return r.content.trim();
    } catch (err) {
      deps.logger?.warn({ err }, "the consolidation summary call failed; archiving the messages raw");
      return undefined;
    }
  }

  /** Archives messages [from, to) of the session's epoch: the entry first (synced), then the store. */
  async function archive(v: SessionView, range: Chunk): Promise<"summary" | "raw" | "nothing"> {
    try {
      return await archiveChunk(v, range);
    } catch (err) {
      // Its entry may be written and the record not: the next read of the session checks history.jsonl again.
      known.delete(v.meta.key);
      throw err;
    }
  }

  async function archiveChunk(v: SessionView, { from, to }: Chunk): Promise<"summary" | "raw" | "nothing"> {
    const chunk = v.messages.slice(from, to);
    const forModel = chunk.filter((m) => !m.shownOnly);
    const summary = await summarise(forModel);
    fault("consolidate-before-append");
    const archived = { epoch: v.meta.epoch, from, to, createdAt: v.meta.createdAt };
    let kind: "summary" | "raw" | "nothing";
    if (summary === "(nothing)") kind = "nothing";
    else if (summary) {
      kind = "summary";
      await deps.files.appendHistory({ content: cut(summary, SUMMARY_MAX_CHARS), sessionKey: v.meta.key, archived });
    } else {
      kind = "raw";
      const body = cut(formatMessages(forModel, deps.timezone), RAW_ARCHIVE_MAX_CHARS);
      await deps.files.appendHistory({ content: `[RAW] ${chunk.length} messages\n${body}`, sessionKey: v.meta.key, archived });
    }
    fault("consolidate-after-append");
    v.state = { ...v.state, lastConsolidated: to };
    await deps.store.batch([consolidationStateOp(v.meta.key, v.state)], { sync: true });
    release(v.messages, to);
    archivedChunks++;
    deps.logger?.info({ sessionKey: v.meta.key, from, to, kind }, "archived session messages");
    return kind;
  }

  /** Token-triggered consolidation; returns how many chunks were archived. */
  function maybeConsolidate(sessionKey: string): Promise<number> {
    return consolidateAndView(sessionKey).then((r) => r.rounds);
  }

  /**
   * Before a turn: idle compaction, then maybeConsolidate, and the session as they left it (what
   * the turn is built from): the session is read once for all.
   */
  function consolidateAndView(sessionKey: string): Promise<{ rounds: number; view: SessionView | undefined }> {
    return locked(sessionKey, async () => {
      const v = await view(sessionKey);
      return { rounds: v ? (await compactIdle(v)) + (await consolidateView(v)) : 0, view: v };
    });
  }

  /**
   * nanobot's idle auto-compaction, checked lazily when the session's next turn is prepared (a
   * passivated session has no timer to fire): a session idle for idleCompactAfterMinutes has its
   * unarchived messages but the last 8 (from the user message starting their turn) archived in
   * chunks as /new archives, each entry synced before the state moves. The turn gets the summaries
   * in its Recent History; returns how many chunks.
   */
  async function compactIdle(v: SessionView): Promise<number> {
    const last = v.messages.at(-1);
    if (!last || last === ARCHIVED || !isIdle(last.at, (deps.now ?? Date.now)(), deps.idleCompactAfterMinutes ?? 0)) return 0;
    const start = v.state.lastConsolidated;
    // Counted over what the model is sent; shown-only messages go with the turn they sit in.
    const visible = v.messages.slice(start).filter((m) => !m.shownOnly);
    const n = idleArchiveCount(visible.map((m) => m.message));
    if (!n) return 0;
    const end = v.messages.indexOf(visible[n]!, start);
    const chunks = tailChunks(v.messages.slice(0, end).map((m) => m.message), start);
    deps.logger?.info({ sessionKey: v.meta.key, from: start, to: end }, "session idle: archiving all but its recent messages");
    for (const chunk of chunks) await archive(v, chunk);
    return chunks.length;
  }

  /** Archives the oldest messages of a session over budget (v's state moves with them); returns how many chunks. */
  async function consolidateView(v: SessionView): Promise<number> {
    if (deps.budget <= 0) return 0;
    // Under the budget by the byte bound: under it by the exact count too.
    if ((await estimateBound(v)) < deps.budget) return 0;
    let estimated = await estimate(v);
    if (estimated < deps.budget) return 0;
    const target = Math.floor(deps.budget / 2);
    let rounds = 0;
    while (rounds < MAX_ROUNDS && estimated > target) {
      // Indexes are positions in the epoch; shown-only messages cost nothing but move with their turn.
      const start = v.state.lastConsolidated;
      const tail = v.messages.slice(start).map(forBoundary);
      const b = pickBoundary(tail, 0, Math.max(1, estimated - target));
      if (!b) break;
      rounds++;
      const kind = await archive(v, { from: start, to: start + b.end });
      estimated = await estimate(v);
      // A degraded model is not asked again in the same consolidation.
      if (kind === "raw") break;
    }
    return rounds;
  }

  /** `/new`: the unarchived tail, archived in chunks the same way; returns how many messages. */
  function archiveTail(sessionKey: string): Promise<number> {
    return locked(sessionKey, async () => {
      const v = await view(sessionKey);
      if (!v) return 0;
      const start = v.state.lastConsolidated;
      for (const chunk of tailChunks(v.messages.map((m) => m.message), start)) await archive(v, chunk);
      return v.messages.length - start;
    });
  }

  return {
    view,
    /** The view's unarchived messages the model is sent (shown-only ones left out), with each one's seq. */
    unarchived: (v: SessionView) => unarchived(v.messages, v.state.lastConsolidated),
    /**
     * The session's actor ended: its messages are read afresh when it starts again, and what was
     * kept beside them (request bytes, token counts) goes now, not at V8's next full collection.
     */
    forget: (sessionKey: string) => {
      const kept = known.get(sessionKey);
      known.delete(sessionKey);
      if (kept) for (const m of kept.messages) if (m !== ARCHIVED) forgetSideData(m.message);
    },
    /** Sessions whose messages are kept (tests check an ended session's are let go). */
    held: () => known.size,
    /** Chunks archived since the daemon started (the soak bench prints it: its sessions reach their budget and consolidate). */
    archivedChunks: () => archivedChunks,
    /** How many unarchived messages the live sessions' kept histories hold (the soak bench prints it: they grow up to the budget). */
    keptMessages: () => {
      let n = 0;
      for (const { messages } of known.values()) for (let i = messages.length - 1; i >= 0 && messages[i] !== ARCHIVED; i--) n++;
      return n;
    },
    maybeConsolidate,
    consolidateAndView,
    archiveTail,
    /** The session's prompt estimate against the budget, for /status. */
    async status(sessionKey: string) {
      const v = await view(sessionKey);
      return { estimated: v ? await estimate(v) : await fixedExact(sessionKey), budget: deps.budget, lastConsolidated: v?.state.lastConsolidated ?? 0, messages: v?.messages.length ?? 0 };
    },
    /** Resolves when no consolidation of the session runs. */
    idle: (sessionKey: string) => locks.get(sessionKey) ?? Promise.resolve(),
  };
}
export type Consolidator = ReturnType<typeof createConsolidator>;
