/**
 * A chat-completions request's JSON body as UTF-8 bytes in pieces, each encoded once and reused call
 * after call (chat-http.ts sends them as they are).
 */
import { runCache } from "./runs.js";

/**
 * The request body as JSON, in UTF-8, assembled from pieces encoded once: a session sends the same
 * message objects call after call (its history, then the turn's own messages), so each message is
 * encoded the first time it is sent and its bytes reused after, until a run holds them (runBytes;
 * messages are never changed in place once made: microcompact and repair make new objects). The
 * tool schemas are the same array on every call of a session (the registry keeps it until its tools
 * change) and often the larger part of a request: encoded once per array. The bytes are those of `JSON.stringify` of the body with
 * `tools` moved last (test/unit/request-body.test.ts pins them).
 */
const encoded = new WeakMap<object, Buffer>();
const COMMA = Buffer.from(",");
const OPEN = Buffer.from("[");
const CLOSE = Buffer.from("]");

/** One value's JSON bytes, kept per object. */
function encodeOnce(value: object): Buffer {
  let bytes = encoded.get(value);
  if (bytes === undefined) encoded.set(value, (bytes = Buffer.from(JSON.stringify(value), "utf8")));
  return bytes;
}

/** Lets go of a message's kept bytes at once (its session's actor ended), not at V8's next full collection: see memory/side-data.ts. */
export const forgetEncoded = (value: object): boolean => encoded.delete(value);

/**
 * Under test (NODE_ENV=test, as vitest sets it, and the processes its tests start) a message is
 * frozen, deeply, once encoded: a change in place, which would leave its cached bytes (and its
 * cached token count) stale, throws where it is made instead of sending an old body.
 */
const FREEZE_SENT = process.env.NODE_ENV === "test";
function deepFreeze(value: unknown) {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const v of Object.values(value)) deepFreeze(v);
}

/**
 * System messages' bytes by their text. The system prompt goes out in a new message object every
 * turn (and in every session) around the same text, kilobytes of it: by identity it would be encoded
 * again each time. A few texts are kept (the prompts in use: one per workspace, with or without MCP).
 */
const systemBytes = new Map<string, Buffer>();
const SYSTEM_TEXTS_KEPT = 8;

/** `{role: "system", content: <text>}` and nothing else, in that order (what the bytes kept by text are). */
function systemText(item: object): string | undefined {
  let keys = 0;
  for (const key in item) {
    if (key !== (keys === 0 ? "role" : keys === 1 ? "content" : undefined)) return undefined;
    keys++;
  }
  const { role, content } = item as { role?: unknown; content?: unknown };
  return keys === 2 && role === "system" && typeof content === "string" ? content : undefined;
}

/** One element's JSON bytes, as JSON.stringify writes an array element (what has no JSON, undefined or a function, is null). */
function element(item: unknown): Buffer {
  if (typeof item !== "object" || item === null) return Buffer.from(JSON.stringify(item) ?? "null", "utf8");
  if (FREEZE_SENT) deepFreeze(item);
  const system = systemText(item);
  if (system === undefined) return encodeOnce(item);
  let bytes = systemBytes.get(system);
  if (bytes === undefined) {
    // The oldest text goes first (a Map keeps insertion order).
    if (systemBytes.size >= SYSTEM_TEXTS_KEPT) systemBytes.delete(systemBytes.keys().next().value as string);
    systemBytes.set(system, (bytes = Buffer.from(JSON.stringify(item), "utf8")));
  }
  return bytes;
}

/**
 * A run of messages as JSON, encoded together, so a long history is a few dozen pieces to send, not
 * thousands (runs.ts). Its messages' own bytes are let go once the run holds them (they were kept
 * twice: a Buffer object and its bytes per message, beside the run's), so what a live session keeps
 * is its runs and the bytes of its newest messages, not yet in a run. A message of a kept run is
 * encoded again only where a run is made anew over it (a cut start, a compacted variant).
 */
const runBytes = runCache((run) => {
  const bytes = Buffer.concat(run.flatMap((item, k) => (k ? [COMMA, element(item)] : [element(item)])));
  for (const item of run) if (typeof item === "object" && item !== null) encoded.delete(item);
  return bytes;
});

/** An array of messages as JSON: `[` its elements' bytes, comma-separated `]`. */
function pushArray(out: Buffer[], items: unknown[]) {
  out.push(OPEN);
  for (let i = 0; i < items.length; ) {
    if (i) out.push(COMMA);
    const run = runBytes(items, i);
    if (run) {
      out.push(run.value);
      i += run.length;
    } else {
      out.push(element(items[i]));
      i++;
    }
  }
  out.push(CLOSE);
}

/**
 * A request's fields other than its messages and tool schemas, as the bytes before the messages
 * (`{"model":…,"messages":`) and after them (with and without the tools to follow).
 */
interface Frame {
  open: Buffer;
  /** Whether the fields place messages (an array under `messages`, or the placeholder of a shape). */
  messages: boolean;
  close: Buffer;
  /** What follows the messages when tool schemas come last: the other fields, then `"tools":`. */
  closeBeforeTools: Buffer;
}
const CLOSE_BRACE = Buffer.from("}");

/** `fields` (in order, JSON.stringify's rules) around a `messages` key; `tools` is left to the caller. */
function frameOf(fields: Record<string, unknown>, placeholder: boolean): Frame {
  let open = "{";
  let close = "";
  let first = true;
  let messages = false;
  for (const name of Object.keys(fields)) {
    const value = fields[name];
    if (name === "messages" && (placeholder || Array.isArray(value))) {
      open += `${first ? "" : ","}"messages":`;
      first = false;
      messages = true;
      continue;
    }
    // Moved last by the caller, as long as there are any (an empty list stays where it is, as any other value).
    if (name === "tools" && Array.isArray(value) && value.length) continue;
    const json = JSON.stringify(value) as string | undefined;
    // As JSON.stringify leaves out a key whose value has no JSON (undefined, a function).
    if (json === undefined) continue;
    const piece = `${first ? "" : ","}${JSON.stringify(name)}:${json}`;
    first = false;
    if (messages) close += piece;
    else open += piece;
  }
  return {
    open: Buffer.from(open, "utf8"),
    messages,
    close: Buffer.from(`${close}}`, "utf8"),
    closeBeforeTools: Buffer.from(`${close}${first ? "" : ","}"tools":`, "utf8"),
  };
}

function piecesOf(frame: Frame, messages: unknown[] | undefined, tools: unknown[] | undefined): Buffer[] {
  const out: Buffer[] = [frame.open];
  if (frame.messages) pushArray(out, messages ?? []);
  if (tools?.length) {
    out.push(frame.closeBeforeTools, encodeOnce(tools), CLOSE_BRACE);
  } else out.push(frame.close);
  return out;
}

/** The body's UTF-8 bytes in pieces, in order (sent as they are: joining them would copy the whole window again). */
export function requestBody(body: Record<string, unknown>): Buffer[] {
  const tools = Array.isArray(body.tools) && body.tools.length ? body.tools : undefined;
  return piecesOf(frameOf(body, false), Array.isArray(body.messages) ? body.messages : undefined, tools);
}

/**
 * A model call's request in the shape of `fields`: its keys in order, `messages` where the messages
 * go (its value is not read), no `tools`, the same object call after call (its bytes are made once and
 * kept with it, as the tool schemas' are). The bytes are requestBody's of the same body.
 */
const frames = new WeakMap<object, Frame>();
export function encodeRequest(fields: Record<string, unknown>, messages: unknown[], tools: unknown[]): Buffer[] {
  let frame = frames.get(fields);
  if (frame === undefined) frames.set(fields, (frame = frameOf(fields, true)));
  return piecesOf(frame, messages, tools);
}

/** The request body as JSON text (what requestBody encodes). */
export const requestJson = (body: Record<string, unknown>): string => Buffer.concat(requestBody(body)).toString("utf8");
