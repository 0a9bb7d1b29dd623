import type { AnyActorRef, InspectionEvent } from "xstate";
import type { Bus, BusEvent } from "../bus/index.js";
import { createSnapshotRedactor } from "./snapshot-redact.js";

/** One live actor, as GET /api/actors, `troupe daemon status` and the inspector show it. */
export interface ActorNode {
  /** Readable and unique: supervisor, channel:api, session:<key>, turn:<session>:<turnId>, subagent:<id>, or <parent>/<effect>. */
  id: string;
  kind: string;
  machine: string | null;
  state: string;
  since: number;
  error?: string;
  /** Restarts within the supervisor's intensity window. */
  restarts?: number;
  children: ActorNode[];
}

interface Tracked {
  ref: AnyActorRef;
  id: string;
  /** The parent's sessionId (an actor of the same system), or for the root of another system (a subagent) the readable id it hangs under. */
  parent: string | null;
  attach?: string;
  /** The readable id of what it hangs under, fixed at spawn (read on every event it publishes). */
  parentId: string | null;
  kind: string;
  machine: string | null;
  state: string;
  since: number;
  children: Set<string>;
  /** The snapshot's children object last diffed: XState makes a new one only when a child is spawned or stopped. */
  seen?: Record<string, AnyActorRef>;
  /** Each tracked child's id under its parent (the key in the snapshot's children). */
  childIds: Map<string, string>;
  /** Its last state event's snapshot, while it may not have been read (so not yet redacted), and that event. */
  unread?: LazySnapshot;
  lastState?: StateEvent;
}

type StateEvent = Extract<BusEvent, { type: "actor_state" }>;
type Snapshot = NonNullable<StateEvent["snapshot"]>;

/** What a state event whose snapshot nobody read carries once a later state of its actor replaced it. */
export const SUPERSEDED = "(not kept: a later state replaced it before anyone read it)";

/**
 * A state event's snapshot, made when first read: redacting every snapshot of every actor cost CPU
 * on every state change, and most are never looked at (no inspector connected). The event reads it
 * through a getter of its own object literal; superseding it (a later state of the actor, unread)
 * only swaps what the getter returns, with no property redefined (Object.defineProperty per state
 * change turned each event into a slow dictionary object).
 */
class LazySnapshot {
  private value: Snapshot | null = null;
  constructor(
    private make: (() => Snapshot) | undefined,
    readonly status: string | null,
  ) {}
  get(): Snapshot | null {
    if (this.make) {
      this.value = this.make();
      this.make = undefined;
    }
    return this.value;
  }
  /** Replaced by a later state before anyone read it: a short note, and the context is let go. */
  supersede(): void {
    if (!this.make) return;
    this.make = undefined;
    this.value = { status: this.status, context: SUPERSEDED };
  }
}

/** The event's snapshot made now and kept as a plain value (an actor's last state, when it stops). */
function settle(event: StateEvent, lazy: LazySnapshot): void {
  Object.defineProperty(event, "snapshot", { value: lazy.get(), enumerable: true, configurable: true, writable: true });
}

/** "active.running" for a nested machine state; the actor status for other logic (and for a machine stopped or failed). */
const flat = (v: unknown): string =>
  typeof v === "string" ? v : v && typeof v === "object" ? Object.entries(v).map(([k, sub]) => `${k}.${flat(sub)}`).join(",") : String(v);

export function stateName(snapshot: { value?: unknown; status?: string }): string {
  // A machine that finished is in its final state (responded, passivated…), which says more than "done".
  return snapshot.value !== undefined && (snapshot.status === "active" || snapshot.status === "done") ? flat(snapshot.value) : (snapshot.status ?? "unknown");
}

type Internals = AnyActorRef & { _parent?: AnyActorRef; logic?: { id?: string; config?: unknown }; src?: unknown; options?: { input?: unknown } };

/** A turn actor's start (fresh input or stored record) names its session and turn. */
function turnOf(input: unknown): { sessionKey: string; turnId: string } | undefined {
  const start = input as { input?: { sessionKey?: unknown; turnId?: unknown }; record?: { sessionKey?: unknown; turnId?: unknown } } | undefined;
  const t = start?.input ?? start?.record;
  return typeof t?.sessionKey === "string" && typeof t.turnId === "string" ? { sessionKey: t.sessionKey, turnId: t.turnId } : undefined;
}

/** A turn's readable id: a subagent is its own actor (`subagent:<id>`, its session key); any other turn is `turn:<session>:<turnId>`. */
export const turnActorId = (sessionKey: string, turnId: string) => (sessionKey.startsWith("subagent:") ? sessionKey : `turn:${sessionKey}:${turnId}`);

export interface ActorTreeOptions {
  now?: () => number;
  /** Known secret values, kept out of the snapshots the event stream carries. */
  secrets?: Iterable<string>;
  /** Where an actor of another system hangs in the tree (a subagent under the session that spawned it). */
  attachTo?: (id: string) => string | undefined;
}

/**
 * Follows the actor system through XState's inspection API: spawned actors, every state change (with
 * its snapshot, redacted), the events they receive, and (by diffing each parent's children) stopped
 * ones. Each change is published on the bus. Actors of other systems (subagent turns) are followed
 * through `inspectRoot`, and hang under the actor `attachTo` names.
 */
export function createActorTree(bus: Bus, opts: ActorTreeOptions = {}) {
  const now = opts.now ?? Date.now;
  const redact = createSnapshotRedactor({ secrets: opts.secrets });
  const actors = new Map<string, Tracked>();
  let rootSession: string | undefined;
  /** What XState reported and what the tree made of it (the bench prints these per turn). */
  const stats = { inspectionEvents: 0, actorsSpawned: 0, published: 0 };
  const publish = (event: BusEvent) => {
    stats.published++;
    bus.publish(event);
  };

  const remove = (sessionId: string) => {
    const t = actors.get(sessionId);
    if (!t) return;
    t.children.forEach(remove);
    actors.delete(sessionId);
    // Its last snapshot is made now, so the stopped actor's context is not held on to by the event log.
    if (t.unread && t.lastState) settle(t.lastState, t.unread);
    t.unread = undefined;
    t.lastState = undefined;
    publish({ type: "actor_stopped", actorId: t.id, parentId: t.parentId, kind: t.kind, machine: t.machine, state: t.state, at: now() });
  };

  function readable(ref: Internals, parent: Tracked | undefined, isRoot: boolean, systemRoot: string | undefined): { id: string; kind: string } {
    const turn = turnOf(ref.options?.input);
    if (turn) {
      const id = turnActorId(turn.sessionKey, turn.turnId);
      return { id, kind: id.startsWith("subagent:") ? "subagent" : "turn" };
    }
    // The root of another system: a session (`session:<key>`) is named and kinded by its id.
    if (isRoot) return { id: systemRoot ?? "supervisor", kind: systemRoot ? (systemRoot.includes(":") ? systemRoot.slice(0, systemRoot.indexOf(":")) : "actor") : "supervisor" };
    if (ref.id.includes(":")) return { id: ref.id, kind: ref.id.slice(0, ref.id.indexOf(":")) };
    // The supervisor's own children (cron, dream) are named by their ids, as it names them.
    if (parent?.kind === "supervisor") return { id: ref.id, kind: ref.id };
    // An effect a machine invokes (callModel, runTools, loadSession…): named under its parent.
    const src = typeof ref.src === "string" ? ref.src : ref.id;
    return { id: `${parent?.id ?? "?"}/${src}`, kind: "effect" };
  }

  function onEvent(event: InspectionEvent, systemRoot?: string, under?: string) {
    stats.inspectionEvents++;
    // Actions and microsteps (a third of what XState reports) change nothing the tree shows.
    if (event.type === "@xstate.action" || event.type === "@xstate.microstep") return;
    const ref = event.actorRef as Internals;
    if (event.type === "@xstate.actor") {
      const parent = ref._parent;
      const isRoot = !parent;
      if (isRoot && !systemRoot) rootSession ??= ref.sessionId;
      const parentTracked = parent ? actors.get(parent.sessionId) : undefined;
      const { id, kind } = readable(ref, parentTracked, isRoot, systemRoot);
      const logic = ref.logic;
      const attach = isRoot && systemRoot ? (under ?? opts.attachTo?.(id)) : undefined;
      // A state machine's logic has a config; its id is the machine's name. Other logic is named by its key.
      const machine = logic?.config && logic.id ? logic.id : null;
      const t: Tracked = {
        ref,
        id,
        parent: parent?.sessionId ?? null,
        attach,
        parentId: parent ? (parentTracked?.id ?? null) : (attach ?? null),
        kind,
        machine,
        // Other logic (a promise, a callback: the effects) is active from its first snapshot: its spawn
        // says so, and no starting → active change is published for each of them (six a turn).
        state: machine ? "starting" : "active",
        since: now(),
        children: new Set(),
        childIds: new Map(),
      };
      actors.set(ref.sessionId, t);
      stats.actorsSpawned++;
      parentTracked?.children.add(ref.sessionId);
      parentTracked?.childIds.set(ref.sessionId, ref.id);
      publish({ type: "actor_spawned", actorId: t.id, parentId: t.parentId, kind: t.kind, machine: t.machine, state: t.state, at: now() });
      return;
    }
    const t = actors.get(ref.sessionId);
    if (!t) return;
    if (event.type === "@xstate.event") {
      const type = (event.event as { type?: unknown }).type;
      // What reaches machines, not the init of every effect.
      if (t.machine && typeof type === "string" && type !== "xstate.init") {
        const source = event.sourceRef ? actors.get(event.sourceRef.sessionId)?.id ?? null : null;
        publish({ type: "actor_event", actorId: t.id, parentId: t.parentId, kind: t.kind, machine: t.machine, state: t.state, at: now(), event: type, source });
      }
      return;
    }
    if (event.type !== "@xstate.snapshot") return;
    const snap = event.snapshot as { value?: unknown; status?: string; context?: unknown; error?: unknown; children?: Record<string, AnyActorRef> };
    const state = stateName(snap);
    if (state !== t.state) {
      const from = t.state;
      t.state = state;
      t.since = now();
      const cause = (event.event as { type?: unknown } | undefined)?.type;
      const error = snap.status === "error" ? String(snap.error instanceof Error ? snap.error.message : snap.error) : null;
      const on = typeof cause === "string" ? cause : null;
      if (t.machine) {
        // The previous state's snapshot, if nobody read it, is not made at all; this one is made when read.
        t.unread?.supersede();
        const status = snap.status ?? null;
        const context = snap.context;
        const lazy = new LazySnapshot(() => ({ status, context: redact(context) }), status);
        t.unread = lazy;
        const changed: StateEvent = {
          type: "actor_state",
          actorId: t.id,
          parentId: t.parentId,
          kind: t.kind,
          machine: t.machine,
          state,
          at: t.since,
          from,
          event: on,
          get snapshot() {
            return lazy.get();
          },
          error,
        };
        t.lastState = changed;
        publish(changed);
      } else publish({ type: "actor_state", actorId: t.id, parentId: t.parentId, kind: t.kind, machine: t.machine, state, at: t.since, from, event: on, snapshot: null, error });
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

  function toNode(t: Tracked, attached: Map<string, Tracked[]>): ActorNode {
    const children = [...t.children].flatMap((c) => {
      const child = actors.get(c);
      return child ? [toNode(child, attached)] : [];
    });
    for (const other of attached.get(t.id) ?? []) children.push(toNode(other, attached));
    return { id: t.id, kind: t.kind, machine: t.machine, state: t.state, since: t.since, children };
  }

  return {
    stats,
    inspect: (event: InspectionEvent) => onEvent(event),
    /** An inspection observer for an actor system of its own (a session, a subagent's turn), named `id` in the tree, under `under` (else where `attachTo` says). */
    inspectRoot: (id: string, under?: string) => (event: InspectionEvent) => onEvent(event, id, under),
    /** The live tree, rooted at the supervisor; actors of other systems hang under the actor they attach to (else the supervisor). */
    tree(extra: (root: ActorNode) => void = () => {}): ActorNode | undefined {
      const root = rootSession ? actors.get(rootSession) : undefined;
      if (!root) return undefined;
      const ids = new Set([...actors.values()].map((t) => t.id));
      const attached = new Map<string, Tracked[]>();
      for (const t of actors.values()) {
        if (t.parent || t === root) continue;
        const under = t.attach && ids.has(t.attach) ? t.attach : root.id;
        const list = attached.get(under);
        if (list) list.push(t);
        else attached.set(under, [t]);
      }
      const node = toNode(root, attached);
      extra(node);
      return node;
    },
  };
}
export type ActorTree = ReturnType<typeof createActorTree>;
