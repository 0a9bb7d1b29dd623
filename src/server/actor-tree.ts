import type { AnyActorRef, InspectionEvent } from "xstate";
import type { Bus } from "../bus/index.js";

/** One live actor, as GET /api/actors and `troupe daemon status` show it. */
export interface ActorNode {
  id: string;
  kind: string;
  machine: string | null;
  state: string;
  since: number;
  error?: string;
  children: ActorNode[];
}

interface Tracked {
  ref: AnyActorRef;
  id: string;
  parent: string | null;
  kind: string;
  machine: string | null;
  state: string;
  since: number;
  children: Set<string>;
  /** The snapshot's children object last diffed: XState makes a new one only when a child is spawned or stopped. */
  seen?: Record<string, AnyActorRef>;
  /** Each tracked child's id under its parent (the key in the snapshot's children). */
  childIds: Map<string, string>;
}

/** "active.running" for a nested machine state; the actor status for other logic. */
export function stateName(snapshot: { value?: unknown; status?: string }): string {
  const flat = (v: unknown): string =>
    typeof v === "string" ? v : v && typeof v === "object" ? Object.entries(v).map(([k, sub]) => `${k}.${flat(sub)}`).join(",") : String(v);
  return snapshot.value !== undefined && snapshot.status === "active" ? flat(snapshot.value) : (snapshot.status ?? "unknown");
}

const kindOf = (id: string, isRoot: boolean) => (isRoot ? "supervisor" : id.includes(":") ? id.slice(0, id.indexOf(":")) : id);

/**
 * Follows the actor system through XState's inspection API: spawned actors, state changes and
 * (by diffing each parent's children) stopped ones. Each change is published on the bus.
 */
export function createActorTree(bus: Bus, now: () => number = Date.now) {
  const actors = new Map<string, Tracked>();
  let rootSession: string | undefined;

  const publish = (type: "actor_spawned" | "actor_stopped" | "actor_state", t: Tracked) =>
    bus.publish({ type, actorId: t.id, parentId: t.parent ? (actors.get(t.parent)?.id ?? null) : null, kind: t.kind, machine: t.machine, state: t.state, at: now() });

  const remove = (sessionId: string) => {
    const t = actors.get(sessionId);
    if (!t) return;
    t.children.forEach(remove);
    actors.delete(sessionId);
    publish("actor_stopped", t);
  };

  function inspect(event: InspectionEvent) {
    const ref = event.actorRef as AnyActorRef;
    if (event.type === "@xstate.actor") {
      const parent = (ref as unknown as { _parent?: AnyActorRef })._parent;
      const isRoot = !parent;
      if (isRoot) rootSession ??= ref.sessionId;
      const logic = (ref as unknown as { logic?: { id?: string } }).logic;
      const src = (ref as unknown as { src?: unknown }).src;
      const t: Tracked = {
        ref,
        id: isRoot ? "supervisor" : ref.id,
        parent: parent?.sessionId ?? null,
        kind: kindOf(ref.id, isRoot),
        machine: logic?.id ?? (typeof src === "string" ? src : null),
        state: "starting",
        since: now(),
        children: new Set(),
        childIds: new Map(),
      };
      actors.set(ref.sessionId, t);
      const parentTracked = t.parent ? actors.get(t.parent) : undefined;
      parentTracked?.children.add(ref.sessionId);
      parentTracked?.childIds.set(ref.sessionId, ref.id);
      publish("actor_spawned", t);
      return;
    }
    if (event.type !== "@xstate.snapshot") return;
    const t = actors.get(ref.sessionId);
    if (!t) return;
    const snap = event.snapshot as { value?: unknown; status?: string; children?: Record<string, AnyActorRef> };
    const state = stateName(snap);
    if (state !== t.state) {
      t.state = state;
      t.since = now();
      publish("actor_state", t);
    }
    // Most events change no child: the diff runs only when the children object is a new one.
    if (snap.children && snap.children !== t.seen) {
      t.seen = snap.children;
      for (const child of [...t.children]) {
        if (snap.children[t.childIds.get(child) ?? ""]?.sessionId !== child) {
          t.children.delete(child);
          t.childIds.delete(child);
          remove(child);
        }
      }
    }
    if (snap.status === "done" || snap.status === "error" || snap.status === "stopped") {
      if (!t.parent) remove(ref.sessionId);
    }
  }

  function toNode(t: Tracked): ActorNode {
    const children = [...t.children].flatMap((c) => {
      const child = actors.get(c);
      return child ? [toNode(child)] : [];
    });
    return { id: t.id, kind: t.kind, machine: t.machine, state: t.state, since: t.since, children };
  }

  return {
    inspect,
    /** The live tree, rooted at the supervisor; failed children (stopped for good) are listed with their error. */
    tree(extra: (root: ActorNode) => void = () => {}): ActorNode | undefined {
      const root = rootSession ? actors.get(rootSession) : undefined;
      if (!root) return undefined;
      const node = toNode(root);
      extra(node);
      return node;
    },
  };
}
export type ActorTree = ReturnType<typeof createActorTree>;
