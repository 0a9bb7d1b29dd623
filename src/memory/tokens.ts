import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import type * as GptTokenizer from "gpt-tokenizer";
import { keptLists } from "../providers/aligned.js";
import type { ToolSchema } from "../providers/client.js";
import type { ChatMessage } from "../providers/messages.js";

/**
 * Token counts with a real BPE tokenizer (gpt-tokenizer, o200k_base). Other models' tokenizers
 * differ by a few percent; the safety buffer in every budget absorbs that.
 *
 * Every o200k (and cl100k) token covers at least one UTF-8 byte, so a text's byte length is an upper
 * bound on its token count. Where that bound already fits a budget the exact count cannot change the
 * outcome, and the tokenizer (its encoder takes ~50 ms to build) is neither loaded nor run: the
 * `…Bound` functions below, and `TokenCost` for a part counted either way.
 */

// Loaded at the first exact count (a synchronous require keeps every count synchronous).
let tokenizer: typeof GptTokenizer | undefined;
// Text that spells a special token (`<|endoftext|>`) is counted as the text it is; by default the tokenizer throws on it.
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };
const countTokens = (text: string): number =>
  (tokenizer ??= createRequire(import.meta.url)("gpt-tokenizer") as typeof GptTokenizer).countTokens(text, PLAIN_TEXT);

/** What a message costs beyond its text (role, separators), as OpenAI counts chat messages. */
const PER_MESSAGE = 4;
/** An image part, counted as a high-detail tile set; what it really costs depends on the provider. */
const PER_IMAGE = 800;
/** The headroom kept below the window for tokenizer drift (nanobot's _SAFETY_BUFFER). */
export const SAFETY_BUFFER = 1024;

/**
 * Counts already made, so a long session's history is not counted again every turn (its messages
 * are counted several times a turn once its size nears the budget): short texts by themselves,
 * long texts by their hash.
 */
const cache = new Map<string, number>();
const CACHE_LIMIT = 20_000;
const CACHE_MIN_CHARS = 256;

/**
 * BPE merges within a word cost the square of its length: one unbroken run of 100,000 characters
 * (base64, a minified file, a pasted blob) takes the tokenizer seconds, 600,000 minutes. Runs of
 * LONG_RUN or more non-space characters are counted in pieces of that length; the tokenizer splits
 * text at spaces anyway, so only those runs' counts change, and by a token per piece at most.
 */
const LONG_RUN = 256;
const LONG_RUNS = new RegExp(`\\S{${LONG_RUN},}`, "g");

function countInPieces(text: string): number {
  let total = 0;
  let last = 0;
  for (const m of text.matchAll(LONG_RUNS)) {
    total += countTokens(text.slice(last, m.index));
    for (let i = 0; i < m[0].length; i += LONG_RUN) total += countTokens(m[0].slice(i, i + LONG_RUN));
    last = m.index + m[0].length;
  }
  return total + countTokens(text.slice(last));
}

export function textTokens(text: string): number {
  // A short text is its own key (hashing it would cost about what looking it up does); a long one is keyed by its hash.
  const key = text.length < CACHE_MIN_CHARS ? text : createHash("sha1").update(text).digest("base64");
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const n = countInPieces(text);
  if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
  cache.set(key, n);
  return n;
}

/** How many counts the cache above holds (at most CACHE_LIMIT), and whether the tokenizer is loaded: the soak bench prints both. */
export const tokenCounts = () => ({ cached: cache.size, limit: CACHE_LIMIT, tokenizerLoaded: tokenizer !== undefined });

/**
 * The last long texts measured, with their byte lengths: the system prompt (kilobytes) is measured
 * several times a turn, each time in a new message object but the same string.
 */
const LONG_TEXT = 1024;
const measured: Array<{ text: string; bytes: number }> = [];
const MEASURED_KEPT = 4;

/** An upper bound on `textTokens(text)` that needs no tokenizer: its UTF-8 byte length. */
export function textTokensBound(text: string): number {
  if (text.length < LONG_TEXT) return Buffer.byteLength(text, "utf8");
  for (const m of measured) if (m.text === text) return m.bytes;
  const bytes = Buffer.byteLength(text, "utf8");
  if (measured.unshift({ text, bytes }) > MEASURED_KEPT) measured.pop();
  return bytes;
}

function messageCost(m: ChatMessage, text: (t: string) => number): number {
  let n = PER_MESSAGE;
  if (typeof m.content === "string") n += text(m.content);
  else if (Array.isArray(m.content)) for (const part of m.content) n += part.type === "text" ? text(part.text) : PER_IMAGE;
  if (m.role === "assistant" && m.tool_calls?.length) n += text(JSON.stringify(m.tool_calls));
  if (m.role === "tool") n += m.name ? text(m.name) : 0;
  return n;
}

/**
 * Exact counts per message object: a live session keeps its messages (the Consolidator's view), and
 * a long one's are costed several times a turn once it nears its budget. Messages are not changed
 * in place (microcompact and repair make new ones), so an object's count stays true.
 */
const counted = new WeakMap<ChatMessage, number>();
export const messageTokens = (m: ChatMessage): number => {
  let n = counted.get(m);
  if (n === undefined) counted.set(m, (n = messageCost(m, textTokens)));
  return n;
};
/** An upper bound on `messageTokens(m)` (see textTokensBound), kept per message object as the exact count is. */
const bounded = new WeakMap<ChatMessage, number>();
export const messageTokensBound = (m: ChatMessage): number => {
  let n = bounded.get(m);
  if (n === undefined) bounded.set(m, (n = messageCost(m, textTokensBound)));
  return n;
};
/** Lets go of a message's kept counts at once (see side-data.ts); true when it had any. */
export function forgetCounts(m: ChatMessage): boolean {
  const exact = counted.delete(m);
  return bounded.delete(m) || exact;
}

/**
 * A list's sum of `cost`, reusing the costs of the lists summed last (providers/aligned.ts): only
 * what is new or moved is costed (`cost` has its own per-object cache). Several sums of the whole
 * window a turn were ~10% of a long session's turn as a WeakMap look-up per run and message.
 */
/** Lists kept: a turn sums the stored history, then each model call's request; other sessions' turns come between. */
const LISTS_KEPT = 4;

function summedAligned(cost: (m: ChatMessage) => number): (messages: ChatMessage[]) => number {
  const lists = keptLists<Float64Array>(LISTS_KEPT);
  return (messages) => {
    const beside = lists.beside(messages);
    const costs = new Float64Array(messages.length);
    let sum = 0;
    for (let i = 0; i < messages.length; i++) {
      const j = beside.at(i);
      const c = j >= 0 ? beside.kept!.data[j]! : cost(messages[i]!);
      costs[i] = c;
      sum += c;
    }
    lists.keep(messages, costs);
    return sum;
  };
}
export const messagesTokens = summedAligned(messageTokens);
export const messagesTokensBound = summedAligned(messageTokensBound);

/** A part of a request counted lazily: `bound` ≥ `exact()`, and `exact()` runs the tokenizer only when called. */
export interface TokenCost {
  bound: number;
  exact(): number;
}

/** A cost already known exactly (its bound is itself). */
export const exactCost = (n: number): TokenCost => ({ bound: n, exact: () => n });

/**
 * The tool schemas as the model is sent them, kept per list: the registry hands out the same list
 * until its tools change (a new list then), and a turn costs it several times.
 */
const toolsJson = new WeakMap<ToolSchema[], { json: string; bound: number }>();
function jsonOf(tools: ToolSchema[]): { json: string; bound: number } {
  if (!tools.length) return { json: "", bound: 0 };
  let known = toolsJson.get(tools);
  // Its byte bound too: the schemas' JSON (kilobytes) was measured again for every model call.
  if (known === undefined) {
    const json = JSON.stringify(tools);
    toolsJson.set(tools, (known = { json, bound: textTokensBound(json) }));
  }
  return known;
}

/** The cost of texts and tool schemas that go into a request whole (system prompt, user message, tools). */
export function fixedCost(texts: string[], tools: ToolSchema[] = []): TokenCost {
  const { json, bound } = jsonOf(tools);
  return {
    bound: texts.reduce((n, t) => n + textTokensBound(t), 0) + bound,
    exact: () => texts.reduce((n, t) => n + textTokens(t), 0) + (json ? textTokens(json) : 0),
  };
}

/** What a request may take: the window less the reply and the safety buffer. */
export const inputBudget = (contextWindowTokens: number, maxTokens: number) => contextWindowTokens - maxTokens - SAFETY_BUFFER;
