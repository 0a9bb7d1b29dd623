import type { ChatMessage } from "../providers/messages.js";
import type { StoredMessage } from "../store/sessions.js";
import { forgetSideData } from "./side-data.js";
import { messageTokens, messageTokensBound } from "./tokens.js";

/**
 * What the Consolidator keeps of a live session's messages between turns, per messages array (the
 * session's, appended in place, in epoch positions): the unarchived messages' token counts as
 * running sums, the model-visible list a turn's history is cut from, and placeholders for what is
 * archived, so a turn costs what it added and an archived message is not held.
 */

/** A stored message with its seq (its position in the epoch, unless a damaged record was dropped). */
export type KeptMessage = StoredMessage & { seq: number };

/** The sum of `cost` over `messages[from, to)`, kept for ranges that move forward: each message is added once and taken off once. */
export type RangeSum = (from: number, to: number) => number;
function rangeSum(messages: StoredMessage[], cost: (m: ChatMessage) => number): RangeSum {
  const costAt = (i: number) => (messages[i]!.shownOnly ? 0 : cost(messages[i]!.message));
  let lo = 0;
  let hi = 0;
  let sum = 0;
  return (from, to) => {
    // A range that moved back or jumped past the one kept is summed afresh.
    if (from < lo || to < hi || from > hi) {
      lo = hi = from;
      sum = 0;
    }
    while (hi < to) sum += costAt(hi++);
    while (lo < from) sum -= costAt(lo++);
    return sum;
  };
}

/**
 * What stands in the kept messages for an archived one. The Consolidator keeps a live session's
 * messages between turns (see `known`), by their position in the epoch; archived ones are never read
 * again (every reader starts at lastConsolidated), and holding them made a long-lived session's
 * history grow in memory without end. The positions stay (a pointer each), the messages go.
 */
export const ARCHIVED: KeptMessage = Object.freeze({ seq: -1, message: Object.freeze({ role: "user", content: "" }) as ChatMessage, turnId: null, at: 0, shownOnly: true });

/** Replaces the messages before `upTo` with ARCHIVED, from the last one still held back (each is replaced once), and lets go of what was kept beside each. */
function letGo(messages: KeptMessage[], upTo: number): void {
  for (let i = Math.min(upTo, messages.length) - 1; i >= 0 && messages[i] !== ARCHIVED; i--) {
    forgetSideData(messages[i]!.message);
    messages[i] = ARCHIVED;
  }
}

/** The index of the first of the ascending `values` at or past `at` (their length if none is). */
function firstAtOrAfter(values: number[], at: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (values[mid]! < at) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The unarchived messages' token counts (exact and byte bound), kept per messages array (a live
 * session's, appended in place) as running sums over the range last asked: appending a message
 * adds its count, archiving takes it off, so a turn does not count the whole window again.
 */
const sums = new WeakMap<KeptMessage[], { exact: RangeSum; bound: RangeSum }>();
export function tokenSums(messages: KeptMessage[]): { exact: RangeSum; bound: RangeSum } {
  let s = sums.get(messages);
  if (!s) sums.set(messages, (s = { exact: rangeSum(messages, messageTokens), bound: rangeSum(messages, messageTokensBound) }));
  return s;
}

/**
 * The model-visible messages (not shown-only) of a messages array with their seq, kept per array
 * as sums are and extended by what was appended: a turn's history is their unarchived tail.
 */
const visible = new WeakMap<KeptMessage[], { scanned: number; messages: ChatMessage[]; positions: number[]; seqs: number[] }>();
export function unarchived(messages: KeptMessage[], lastConsolidated: number): { messages: ChatMessage[]; seqOf: (i: number) => number } {
  let c = visible.get(messages);
  if (!c) visible.set(messages, (c = { scanned: 0, messages: [], positions: [], seqs: [] }));
  for (; c.scanned < messages.length; c.scanned++) {
    const m = messages[c.scanned]!;
    if (m.shownOnly) continue;
    c.messages.push(m.message);
    c.positions.push(c.scanned);
    c.seqs.push(m.seq);
  }
  // The first kept at or after lastConsolidated, a position in the epoch (a seq can be past its
  // position where a damaged record was dropped at open).
  const from = firstAtOrAfter(c.positions, lastConsolidated);
  const seqs = c.seqs;
  return { messages: c.messages.slice(from), seqOf: (i) => seqs[from + i]! };
}

/**
 * Lets go of the messages before `upTo` (archived): the running sums are moved past them first
 * (taking a message off needs its count, which its placeholder does not have), and the
 * model-visible list drops them, so neither keeps an archived message alive.
 */
export function release(messages: KeptMessage[], upTo: number): void {
  const last = Math.min(upTo, messages.length) - 1;
  if (last < 0 || messages[last] === ARCHIVED) return;
  const s = sums.get(messages);
  if (s) {
    s.exact(upTo, messages.length);
    s.bound(upTo, messages.length);
  }
  const c = visible.get(messages);
  if (c) {
    const k = firstAtOrAfter(c.positions, upTo);
    c.messages.splice(0, k);
    c.positions.splice(0, k);
    c.seqs.splice(0, k);
  }
  letGo(messages, upTo);
}

