import type { AnyActorRef } from "xstate";

/** How the actor tree (src/server/actor-tree.ts) names an actor and says what kind it is. */

export type Internals = AnyActorRef & { _parent?: AnyActorRef; logic?: { id?: string; config?: unknown }; src?: unknown; options?: { input?: unknown } };

/** A turn actor's start (fresh input or stored record) names its session and turn. */
function turnOf(input: unknown): { sessionKey: string; turnId: string } | undefined {
  const start = input as { input?: { sessionKey?: unknown; turnId?: unknown }; record?: { sessionKey?: unknown; turnId?: unknown } } | undefined;
  const t = start?.input ?? start?.record;
  return typeof t?.sessionKey === "string" && typeof t.turnId === "string" ? { sessionKey: t.sessionKey, turnId: t.turnId } : undefined;
}

/** A turn's readable id: a subagent is its own actor (`subagent:<id>`, its session key); any other turn is `turn:<session>:<turnId>`. */
export const turnActorId = (sessionKey: string, turnId: string) => (sessionKey.startsWith("subagent:") ? sessionKey : `turn:${sessionKey}:${turnId}`);

/** The machine an actor runs, by name; null for other logic (a promise, a callback: the effects). */
export function machineName(ref: Internals): string | null {
  const logic = ref.logic;
  // A state machine's logic has a config; its id is the machine's name. Other logic is named by its key.
  return logic?.config && logic.id ? logic.id : null;
}

/** An actor's readable id and kind, from what it is (a turn, a system's root, a named child, an effect) and what it hangs under. */
export function readable(ref: Internals, parent: { id: string; kind: string } | null, systemRoot: string | undefined): { id: string; kind: string } {
  const turn = turnOf(ref.options?.input);
  if (turn) {
    const id = turnActorId(turn.sessionKey, turn.turnId);
    return { id, kind: id.startsWith("subagent:") ? "subagent" : "turn" };
  }
  // The root of another system: a session (`session:<key>`) is named and kinded by its id.
  if (!parent) return { id: systemRoot ?? "supervisor", kind: systemRoot ? (systemRoot.includes(":") ? systemRoot.slice(0, systemRoot.indexOf(":")) : "actor") : "supervisor" };
  if (ref.id.includes(":")) return { id: ref.id, kind: ref.id.slice(0, ref.id.indexOf(":")) };
  // The supervisor's own children (cron, dream) are named by their ids, as it names them.
  if (parent.kind === "supervisor") return { id: ref.id, kind: ref.id };
  // An effect a machine invokes (callModel, runTools, finalizeContent…): named under its parent.
  const src = typeof ref.src === "string" ? ref.src : ref.id;
  return { id: `${parent.id}/${src}`, kind: "effect" };
}
