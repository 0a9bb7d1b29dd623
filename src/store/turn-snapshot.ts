import type { ChatMessage } from "../providers/messages.js";
import type { TurnRecord } from "./turns.js";

/**
 * A turn-machine snapshot as a turn record stores it (packSnapshot, persistTurnSnapshot: what the
 * record's context and children can leave out) and as restore needs it again (unpackSnapshot).
 */

/** Marks a child's input whose `messages` were the context's (the model call's), left out of the stored snapshot. */
const MESSAGES_FROM_CONTEXT = "messagesFromContext";
/**
 * Format 5: marks a child's input whose SHARED_FIELDS all equalled the context's (turn.machine.ts's
 * turnFields: every invoked child gets them), left out of the stored snapshot.
 */
const SHARED_FROM_CONTEXT = "sharedFromContext";
const SHARED_FIELDS = ["turnId", "sessionKey", "channel", "chatId", "seq", "iteration"] as const;
const SHARED = new Set<string>(SHARED_FIELDS);
/** Format 5: marks a child's input whose `calls` were the context's `pendingToolCalls` (the same array), left out. */
const CALLS_FROM_CONTEXT = "callsFromContext";

type PersistedChild = { snapshot?: { input?: Record<string, unknown> } & Record<string, unknown>; syncSnapshot?: boolean } & Record<string, unknown>;
type Persisted = TurnRecord["snapshot"] & { children?: Record<string, PersistedChild>; historyValue?: Record<string, unknown>; output?: unknown };

/**
 * The snapshot as stored: no messages in its context, nor in the input of the child invoked with
 * them (the model call), which XState would otherwise persist a second time; from format 5 neither
 * what can be rebuilt on restore: a child input's fields copied from the context (its turn fields,
 * the tool calls), XState's defaults (an empty `historyValue`, a child's `syncSnapshot: false`), nor
 * a final snapshot's `output` (a final snapshot is never restored: its batch closes the turn, and
 * its messages and reply are the session's and the outbox's). The live snapshot is not touched.
 */
export function packSnapshot(persisted: TurnRecord["snapshot"]): TurnRecord["snapshot"] {
  // Copied key by key, leaving keys out: rest destructuring, or a spread setting keys to undefined,
  // costs several times more here.
  const { children, historyValue, context, status, output } = persisted as Persisted;
  const packed: Record<string, unknown> = {};
  for (const key in persisted) {
    if (key !== "children" && key !== "historyValue" && key !== "output" && key !== "context") packed[key] = persisted[key as keyof typeof persisted];
  }
  if (!isEmpty(historyValue)) packed.historyValue = historyValue;
  if (output !== undefined && status !== "done") packed.output = output;
  // The runtime persists a context whose messages are already left out: it is not copied again.
  packed.context = context.messages.length ? { ...context, messages: [] } : context;
  const packedChildren: Record<string, PersistedChild> = {};
  for (const id in children) packedChildren[id] = packChild(children[id]!, context);
  packed.children = packedChildren;
  return packed as TurnRecord["snapshot"];
}

/** A live child actor of the turn, as XState's own persistence reads it. */
interface LiveChild {
  src: unknown;
  systemId?: string;
  _syncSnapshot?: boolean;
  getPersistedSnapshot(): unknown;
}

/** The live turn-machine snapshot's fields that persistence reads. */
export interface LiveTurnSnapshot {
  status: string;
  value: unknown;
  error?: unknown;
  output?: unknown;
  historyValue?: Record<string, unknown>;
  context: Record<string, unknown> & { messages: unknown[] };
  children: Record<string, LiveChild | undefined>;
}

/**
 * packSnapshot(machine.getPersistedSnapshot(snapshot)) in one pass, for the turn machine: its
 * context holds no actor references (XState's persistContext walk would copy none), it has no
 * history states, and its children are named by key (src is a string). XState's version
 * rest-copies the snapshot and walks the whole context on every checkpoint, the packing then copies
 * it all again; this copies the context once, its messages left out.
 */
export function persistTurnSnapshot(snap: LiveTurnSnapshot): TurnRecord["snapshot"] {
  const packed: Record<string, unknown> = { status: snap.status, error: snap.error, value: snap.value };
  if (!isEmpty(snap.historyValue)) throw new Error("the turn machine has no history states: persistTurnSnapshot cannot store a history value");
  if (snap.output !== undefined && snap.status !== "done") packed.output = snap.output;
  const context = { ...snap.context, messages: [] };
  packed.context = context;
  const children: Record<string, PersistedChild> = {};
  for (const id in snap.children) {
    const child = snap.children[id];
    if (!child) continue;
    children[id] = packChild({ snapshot: child.getPersistedSnapshot() as PersistedChild["snapshot"], src: child.src, systemId: child.systemId, syncSnapshot: child._syncSnapshot }, snap.context);
  }
  packed.children = children;
  return packed as TurnRecord["snapshot"];
}

const isEmpty = (value: object | undefined) => {
  for (const _ in value) return false;
  return true;
};

function packChild(child: PersistedChild, context: Record<string, unknown>): PersistedChild {
  const input = child.snapshot?.input;
  const out: PersistedChild = {};
  for (const key in child) if (key !== "snapshot" && (key !== "syncSnapshot" || child.syncSnapshot)) out[key] = child[key];
  if (!input) {
    if (child.snapshot) out.snapshot = child.snapshot;
    return out;
  }
  let shared = true;
  for (const key of SHARED_FIELDS) if (!(key in input) || input[key] !== context[key]) shared = false;
  const messages = Array.isArray(input.messages) && input.messages.length > 0;
  const calls = input.calls !== undefined && input.calls === context.pendingToolCalls;
  const kept: Record<string, unknown> = {};
  for (const key in input) {
    if (key === "messages" ? messages : key === "calls" ? calls : shared && SHARED.has(key)) continue;
    kept[key] = input[key];
  }
  // The context's messages, or their first n (finalizeContent's input leaves out the draft answer).
  if (messages) {
    const n = (input.messages as unknown[]).length;
    kept[MESSAGES_FROM_CONTEXT] = n < ((context.messages as unknown[] | undefined)?.length ?? 0) ? n : true;
  }
  if (shared) kept[SHARED_FROM_CONTEXT] = true;
  if (calls) kept[CALLS_FROM_CONTEXT] = true;
  out.snapshot = { ...child.snapshot, input: kept };
  return out;
}

/** The inverse of packSnapshot, given the context's messages (records of formats 3 and 4 read as they are). */
export function unpackSnapshot(snapshot: TurnRecord["snapshot"], messages: ChatMessage[]): TurnRecord["snapshot"] {
  const { children = {}, historyValue = {}, ...rest } = snapshot as Persisted;
  const context = { ...snapshot.context, messages } as Record<string, unknown>;
  context.injected ??= [];
  const unpacked: Record<string, PersistedChild> = {};
  for (const [id, child] of Object.entries(children)) {
    const input = child.snapshot?.input;
    const full = { ...child, syncSnapshot: child.syncSnapshot ?? false };
    if (!input || !(input[MESSAGES_FROM_CONTEXT] || input[SHARED_FROM_CONTEXT] || input[CALLS_FROM_CONTEXT])) {
      unpacked[id] = full;
      continue;
    }
    const { [MESSAGES_FROM_CONTEXT]: fromMessages, [SHARED_FROM_CONTEXT]: fromShared, [CALLS_FROM_CONTEXT]: fromCalls, ...kept } = input;
    const restored: Record<string, unknown> = { ...kept };
    if (fromShared) for (const key of SHARED_FIELDS) restored[key] = context[key];
    if (fromMessages) restored.messages = typeof fromMessages === "number" ? messages.slice(0, fromMessages) : messages;
    if (fromCalls) restored.calls = context.pendingToolCalls;
    unpacked[id] = { ...full, snapshot: { ...child.snapshot, input: restored } };
  }
  return { ...rest, historyValue, context: context as TurnRecord["snapshot"]["context"], children: unpacked } as TurnRecord["snapshot"];
}
