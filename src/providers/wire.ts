import { TroupeError } from "../errors.js";
import { modelResponseSchema, type ModelResponse, type ParsedToolCall, type Usage } from "./messages.js";
import { parseToolArguments } from "./parse.js";
import { stripThink } from "./think.js";

/**
 * What an OpenAI-compatible server sends, read as untrusted input. The SDK types say `number` and
 * `string`, but servers send fractional, string or negative token counts, numeric ids, arguments as
 * objects, and megabytes of text. Everything is coerced here, at the boundary, into values a
 * checkpoint and a session record can hold, and bounded, so one reply cannot fill the heap.
 */

/** The reply could not be read at all (no choices, a message that is not an object). */
export class MalformedReplyError extends TroupeError {}

/** Ids and names are short in every real reply; anything longer is cut to this. */
const MAX_ID_CHARS = 256;
/** Tool calls kept from one reply; a reply asking for more is cut (a model never needs this many at once). */
export const MAX_TOOL_CALLS = 128;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** A text field: strings as they are, numbers and booleans spelled out, content-part arrays joined, anything else empty. */
export function asText(v: unknown): string {
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  if (Array.isArray(v)) return v.map((part) => (typeof part === "string" ? part : isObject(part) && typeof part.text === "string" ? part.text : "")).join("");
  return "";
}

/** An id or a name: a string or a number, else undefined. */
function asName(v: unknown): string | undefined {
  if (typeof v === "string") return v.slice(0, MAX_ID_CHARS);
  if (typeof v === "number" && Number.isFinite(v)) return String(v);
  return undefined;
}

/** Tool-call arguments: some servers send an object instead of a JSON string. */
function asArguments(v: unknown): string {
  if (typeof v === "string") return v;
  if (typeof v === "object" && v !== null) return JSON.stringify(v);
  return asText(v);
}

/** A token count: a non-negative integer (a numeric string counts), else undefined. */
function asCount(v: unknown): number | undefined {
  const n = typeof v === "number" ? v : typeof v === "string" && v.trim() !== "" ? Number(v) : Number.NaN;
  return Number.isFinite(n) && n >= 0 ? Math.min(Math.floor(n), Number.MAX_SAFE_INTEGER) : undefined;
}

export function toUsage(v: unknown): Usage {
  if (!isObject(v)) return { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
  const promptTokens = asCount(v.prompt_tokens) ?? 0;
  const completionTokens = asCount(v.completion_tokens) ?? 0;
  const totalTokens = asCount(v.total_tokens) ?? Math.min(promptTokens + completionTokens, Number.MAX_SAFE_INTEGER);
  return { promptTokens, completionTokens, totalTokens };
}

/** Text that keeps at most `max` characters and counts the rest. */
interface CappedText {
  text: string;
  total: number;
}
const capped = (): CappedText => ({ text: "", total: 0 });

/** Appends a piece; returns the part of it that was kept. */
function append(t: CappedText, piece: string, max: number): string {
  t.total += piece.length;
  const room = max - t.text.length;
  if (room <= 0) return "";
  const kept = piece.length <= room ? piece : piece.slice(0, room);
  t.text += kept;
  return kept;
}

const cutNote = (t: CappedText, max: number) =>
  t.total > max ? `\n\n[reply cut: the model sent ${t.total} characters; only the first ${max} are kept]` : "";

interface CallSlot {
  id: string;
  name: string;
  args: string;
  /** Characters of arguments sent, kept or not. */
  argsSent: number;
  /** Over the budget: its arguments are dropped and the call is refused. */
  refused: boolean;
}

/** One reply as it arrives, whole (a completion) or in chunks (a stream), within `maxChars` per text. */
export interface ReplyAccumulator {
  /** Adds a streamed chunk; returns the reply text it adds (capped, think blocks not yet removed). */
  chunk(raw: unknown): string;
  /** Takes a whole (non-streamed) completion; throws MalformedReplyError when it has no readable message. */
  completion(raw: unknown): void;
  /** The response, checked against the schema the turn and the store rely on. */
  finish(): ModelResponse;
  /** Tool calls beyond MAX_TOOL_CALLS that were dropped. */
  readonly droppedCalls: number;
}

export function createReplyAccumulator(maxChars: number): ReplyAccumulator {
  const content = capped();
  const reasoning = capped();
  const calls = new Map<number, CallSlot>();
  let lastIndex = -1;
  let finishReason: string | null = null;
  let usage: Usage = toUsage(undefined);
  let droppedCalls = 0;
  // All tool calls of a reply share one budget, so many calls cannot add up to what one may not send.
  let argsKept = 0;

  /** The slot a (possibly index-less) tool-call delta belongs to, or undefined when over the limit. */
  function slotFor(tc: Record<string, unknown>, position: number, streamed: boolean): CallSlot | undefined {
    let index = typeof tc.index === "number" && Number.isInteger(tc.index) && tc.index >= 0 ? tc.index : undefined;
    if (index === undefined && !streamed) index = position;
    if (index === undefined) {
      // Streamed without an index: a delta continues the call with its id, a new id starts a call, no id continues the last.
      const id = asName(tc.id);
      const same = id === undefined ? undefined : [...calls.entries()].find(([, c]) => c.id === id)?.[0];
      index = same ?? (id !== undefined || lastIndex < 0 ? lastIndex + 1 : lastIndex);
    }
    let slot = calls.get(index);
    if (!slot) {
      if (calls.size >= MAX_TOOL_CALLS) {
        droppedCalls++;
        return undefined;
      }
      slot = { id: "", name: "", args: "", argsSent: 0, refused: false };
      calls.set(index, slot);
    }
    lastIndex = Math.max(lastIndex, index);
    return slot;
  }

  function addToolCall(tc: unknown, position: number, streamed: boolean) {
    if (!isObject(tc)) return;
    const fn = isObject(tc.function) ? tc.function : {};
    const slot = slotFor(tc, position, streamed);
    if (!slot) return;
    const id = asName(tc.id);
    if (id) slot.id = id;
    const name = asName(fn.name);
    if (name) slot.name = (slot.name + name).slice(0, MAX_ID_CHARS);
    const piece = asArguments(fn.arguments);
    slot.argsSent += piece.length;
    if (slot.refused) return;
    if (argsKept + piece.length > maxChars) {
      // Refused whole: what it had kept goes back to the budget, for the calls after it.
      slot.refused = true;
      argsKept -= slot.args.length;
      slot.args = "";
      return;
    }
    argsKept += piece.length;
    slot.args += piece;
  }

  const reason = (v: unknown) => (typeof v === "string" ? v.slice(0, MAX_ID_CHARS) : null);

  return {
    get droppedCalls() {
      return droppedCalls;
    },
    chunk(raw) {
      if (!isObject(raw)) return "";
      if (raw.usage !== undefined && raw.usage !== null) usage = toUsage(raw.usage);
      const choice = Array.isArray(raw.choices) ? raw.choices[0] : undefined;
      if (!isObject(choice)) return "";
      const delta = isObject(choice.delta) ? choice.delta : {};
      const text = append(content, asText(delta.content), maxChars);
      append(reasoning, asText(delta.reasoning_content), maxChars);
      if (Array.isArray(delta.tool_calls)) delta.tool_calls.forEach((tc, i) => addToolCall(tc, i, true));
      finishReason = reason(choice.finish_reason) ?? finishReason;
      return text;
    },
    completion(raw) {
      if (!isObject(raw)) throw new MalformedReplyError("the reply is not a JSON object");
      const choice = Array.isArray(raw.choices) ? raw.choices[0] : undefined;
      if (choice === undefined) throw new MalformedReplyError("the reply has no choices");
      if (!isObject(choice) || !isObject(choice.message)) throw new MalformedReplyError("the reply's message is not an object");
      const msg = choice.message;
      append(content, asText(msg.content), maxChars);
      append(reasoning, asText(msg.reasoning_content), maxChars);
      if (Array.isArray(msg.tool_calls)) msg.tool_calls.forEach((tc, i) => addToolCall(tc, i, false));
      finishReason = reason(choice.finish_reason);
      usage = toUsage(raw.usage);
    },
    finish() {
      const seen = new Set<string>();
      const toolCalls: ParsedToolCall[] = [...calls.entries()]
        .sort(([a], [b]) => a - b)
        .map(([i, c]) => {
          // Results are matched to calls by id (and journaled by it): a missing or repeated id gets one of its own.
          let id = c.id || `call_${i}`;
          if (seen.has(id)) id = `${id}_${i}`;
          seen.add(id);
          if (c.refused) {
            // The arguments are not kept (that is the point); "{}" keeps the history valid JSON for strict servers.
            return {
              id,
              name: c.name,
              rawArguments: "{}",
              arguments: null,
              argumentsError:
                `the arguments are ${c.argsSent} characters, over the limit of ${maxChars} for the tool calls of one reply (agents.defaults.maxReplyChars); ` +
                "send less in one call, e.g. write a large file in several parts",
            };
          }
          const parsed = parseToolArguments(c.args);
          return {
            id,
            name: c.name,
            rawArguments: c.args,
            arguments: "value" in parsed ? parsed.value : null,
            ...("error" in parsed ? { argumentsError: parsed.error } : {}),
          };
        });
      const response = {
        // A reply cut at the token limit is continued and joined: its outer whitespace is part of it (nanobot's _restore_outer_whitespace).
        content: (finishReason === "length" ? withOuterWhitespace(stripThink(content.text), content.text) : stripThink(content.text)) + cutNote(content, maxChars),
        toolCalls,
        ...(reasoning.text ? { reasoningContent: reasoning.text + cutNote(reasoning, maxChars) } : {}),
        finishReason,
        usage,
      };
      // The coercions above make this hold; checking it keeps a bad value out of every checkpoint if they ever miss one.
      const bad = malformed(response);
      if (bad) throw new MalformedReplyError(`the reply could not be read: ${bad}`);
      if (CHECK_SCHEMA) {
        // Under test the schema the store relies on checks it too, so this check and that schema cannot drift apart.
        const checked = modelResponseSchema.safeParse(response);
        if (!checked.success) {
          const issue = checked.error.issues[0];
          throw new MalformedReplyError(`the reply could not be read: ${issue?.path.map(String).join(".")}: ${issue?.message}`);
        }
      }
      return response;
    },
  };
}

/**
 * Under test (NODE_ENV=test, as vitest sets it, and the processes its tests start) each response is
 * also checked against modelResponseSchema; elsewhere the check below alone runs: the schema's parse
 * cost more per model call (~35 µs) than the rest of reading the reply.
 */
const CHECK_SCHEMA = process.env.NODE_ENV === "test";

const isCount = (n: unknown) => typeof n === "number" && Number.isSafeInteger(n) && n >= 0;
const isRecord = (v: unknown) => typeof v === "object" && v !== null && !Array.isArray(v);

/** What in a response breaks modelResponseSchema (the first thing found), or undefined when it holds: the schema's checks, by hand. */
export function malformed(r: ModelResponse): string | undefined {
  if (typeof r.content !== "string") return "content: not a string";
  if (r.reasoningContent !== undefined && typeof r.reasoningContent !== "string") return "reasoningContent: not a string";
  if (r.finishReason !== null && typeof r.finishReason !== "string") return "finishReason: not a string";
  if (!isRecord(r.usage) || !isCount(r.usage.promptTokens) || !isCount(r.usage.completionTokens) || !isCount(r.usage.totalTokens)) return "usage: not token counts";
  if (!Array.isArray(r.toolCalls)) return "toolCalls: not a list";
  for (let i = 0; i < r.toolCalls.length; i++) {
    const c = r.toolCalls[i]!;
    if (typeof c.id !== "string" || typeof c.name !== "string" || typeof c.rawArguments !== "string") return `toolCalls.${i}: id, name or arguments not a string`;
    if (c.arguments !== null && !isRecord(c.arguments)) return `toolCalls.${i}.arguments: not an object`;
    if (c.argumentsError !== undefined && typeof c.argumentsError !== "string") return `toolCalls.${i}.argumentsError: not a string`;
  }
  return undefined;
}

/** `text` with the whitespace `original` starts and ends with (cleaning a reply trims it). */
function withOuterWhitespace(text: string, original: string): string {
  if (!text) return text;
  const leading = /^\s*/.exec(original)?.[0] ?? "";
  const trailing = /\s*$/.exec(original)?.[0] ?? "";
  return `${leading}${text}${trailing}`;
}
