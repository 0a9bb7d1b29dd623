import type { AnyActorRef, InspectionEvent, Subscription } from "xstate";
import type { Bus, BusEvent } from "../bus/index.js";
import { machineName, readable, type Internals } from "./actor-names.js";
import { LazySnapshot, lazyStateEvent, settle, stateName, type StateEvent } from "./actor-state.js";
import { treeView, type ActorNode } from "./actor-view.js";
import { createSnapshotRedactor } from "./snapshot-redact.js";

interface Node {
  ref: Internals;
  id: string;
  /** The tracked parent in the same actor system; null for a system's root. */
  parent: Node | null;
  /** The root of another system than the supervisor's: the readable id it hangs under (fixed when followed). */
  attach?: string;
  /** The readable id of what it hangs under, fixed at spawn (read on every event it publishes). */
  parentId: string | null;
  kind: string;
  machine: string | null;
  state: string;
  since: number;
  /** Its tracked children, by sessionId. */
  children: Map<string, Node>;
  /** The snapshot's children object last diffed: XState makes a new one only when a child is spawned or stopped. */
  seen?: Record<string, AnyActorRef>;
  /** A machine's (and every root's) snapshot subscription: keeps its state and since true while nobody watches. */
  sub?: Subscription;
  /** A root's inspection subscription, while someone watches. */
  inspection?: Subscription;
  /** Its last state event's snapshot, while it may not have been read (so not yet redacted), and that event. */
  unread?: LazySnapshot;
  lastState?: StateEvent;
}

type Snap = { value?: unknown; status?: string; context?: unknown; error?: unknown; children?: Record<string, AnyActorRef> };

export interface ActorTreeOptions {
  now?: () => number;
  /** Known secret values, kept out of the snapshots the event stream carries. */
  secrets?: Iterable<string>;
  /** Where an actor of another system hangs in the tree (a subagent under the session that spawned it). */
  attachTo?: (id: string) => string | undefined;
}

/**
 * The live actors of every actor system troupe runs (the supervisor's, each session's, each
 * subagent's turn), and, while someone watches, every change of them on the bus.
 *
 * The tree is kept with no inspection at all: each system's root is followed by its creator
 * (`follow`), and each state machine in it is subscribed to (a snapshot callback that notes its
 * state, when it changed, and its children spawned or stopped). Effects (promises, callbacks) are
 * found in their machine's children. That is a few callbacks a turn, and nothing is published.
 *
 * XState's inspection (an event for every event relayed, snapshot, action and microstep, ~80 a
 * turn) is attached to every live system only while someone watches (`watch`, an /api/events
 * client): then every change is published on the bus as actor_spawned/stopped/state/event, with the
 * event that caused it and its snapshot, redacted. When watching starts again after a time nobody
 * watched, an `actor_gap` event says so: nothing of that time was recorded.
 */
export function createActorTree(bus: Bus, opts: ActorTreeOptions = {}) {
  const now = opts.now ?? Date.now;
  const redact = createSnapshotRedactor({ secrets: opts.secrets });
  /** Every tracked actor, by its sessionId (unique across systems). */
  const nodes = new Map<string, Node>();
  /** The root of each followed system; the supervisor's is the tree's root. */
  const roots = new Set<Node>();
  let supervisor: Node | undefined;
  let watchers = 0;
  /** When the last watcher left (or the tree began): what a replay cannot show starts here. */
  let unwatchedSince = now();
  /** What XState reported and what the tree made of it (the bench prints these per turn). */
  const stats = { inspectionEvents: 0, actorsSpawned: 0, published: 0 };
  const publish = (event: BusEvent) => {
    stats.published++;
    bus.publish(event);
  };

  function remove(node: Node) {
    const sessionId = node.ref.sessionId;
    if (nodes.get(sessionId) !== node) return;
    for (const child of node.children.values()) remove(child);
    nodes.delete(sessionId);
    node.parent?.children.delete(sessionId);
    roots.delete(node);
    node.sub?.unsubscribe();
    node.inspection?.unsubscribe();
    // Its last snapshot is made now, so the stopped actor's context is not held on to by the event log.
    if (node.unread && node.lastState) settle(node.lastState, node.unread);
    node.unread = undefined;
    node.lastState = undefined;
    if (watchers) publish({ type: "actor_stopped", actorId: node.id, parentId: node.parentId, kind: node.kind, machine: node.machine, state: node.state, at: now() });
  }

  /**
   * Starts tracking an actor (and the children it already has). `made`: "constructing" (XState's
   * report of it, from its constructor: it has no snapshot yet), "unstarted" (a root followed before
   * it starts, and its first children), or "running" (a child found in its parent's snapshot). A
   * machine is "starting" until its first snapshot, unless it runs already.
   */
  function track(ref: Internals, parent: Node | null, made: "constructing" | "unstarted" | "running", root?: { id?: string; under?: string }): Node {
    const known = nodes.get(ref.sessionId);
    if (known) return known;
    const { id, kind } = readable(ref, parent, root?.id);
    const machine = machineName(ref);
    const attach = !parent && root?.id ? (root.under ?? opts.attachTo?.(id)) : undefined;
    // Constructing, an actor has no snapshot yet (reading it throws).
    const snap = made === "constructing" ? undefined : (ref.getSnapshot() as Snap | undefined);
    const node: Node = {
      ref,
      id,
      parent,
      attach,
      parentId: parent ? parent.id : (attach ?? null),
      kind,
      machine,
      // Other logic (a promise, a callback: the effects) is active from its first snapshot: its spawn
      // says so, and no starting → active change is published for each of them (six a turn).
      state: !machine ? "active" : made !== "running" || !snap ? "starting" : stateName(snap),
      since: now(),
      children: new Map(),
      // Every field present from the start: one object shape for all nodes, so apply's and track's
      // property reads stay monomorphic (fields added later gave each kind of node its own shape).
      seen: undefined,
      sub: undefined,
      inspection: undefined,
      unread: undefined,
      lastState: undefined,
    };
    nodes.set(ref.sessionId, node);
    stats.actorsSpawned++;
    if (parent) parent.children.set(ref.sessionId, node);
    else {
      roots.add(node);
      if (!root?.id) supervisor ??= node;
    }
    if (watchers) publish({ type: "actor_spawned", actorId: node.id, parentId: node.parentId, kind: node.kind, machine: node.machine, state: node.state, at: now() });
    if (!parent) node.sub = ref.subscribe({ next: (s) => watchers || apply(node, s as Snap, null), error: () => ended(node), complete: () => ended(node) });
    // With an error listener: an observer without one makes XState rethrow the child's failure at
    // the process (the gateway would exit), where its parent handles it (the supervisor restarts it).
    else if (machine) node.sub = ref.subscribe({ next: (s) => watchers || apply(node, s as Snap, null), error: () => {} });
    if (snap?.children) {
      node.seen = snap.children;
      for (const child of Object.values(snap.children)) track(child as Internals, node, made);
    }
    return node;
  }

  /** A root ended (done, failed, stopped). Watched, its inspection reports it (with the cause); this is the fallback for a path that sends none. */
  function ended(node: Node) {
    const end = () => {
      if (nodes.get(node.ref.sessionId) !== node) return;
      apply(node, node.ref.getSnapshot() as Snap, null);
      remove(node);
    };
    if (watchers) queueMicrotask(end);
    else end();
  }

  /** A new snapshot of a tracked actor: its state, its children, and (watched) the change published. */
  function apply(node: Node, snap: Snap, cause: string | null) {
    const state = stateName(snap);
    if (state !== node.state) {
      const from = node.state;
      node.state = state;
      node.since = now();
      // The previous state's snapshot, if nobody read it, is not made at all.
      node.unread?.supersede();
      node.unread = undefined;
      node.lastState = undefined;
      if (watchers) publishState(node, snap, from, cause);
    }
    // Most snapshots change no child: the diff runs only when the children object is a new one.
    if (snap.children && snap.children !== node.seen) {
      node.seen = snap.children;
      for (const [sessionId, child] of node.children) {
        if (snap.children[child.ref.id]?.sessionId !== sessionId) remove(child);
      }
      for (const child of Object.values(snap.children)) if (!nodes.has(child.sessionId)) track(child as Internals, node, "running");
    }
    if (!node.parent && (snap.status === "done" || snap.status === "error" || snap.status === "stopped")) remove(node);
  }

  function publishState(node: Node, snap: Snap, from: string, on: string | null) {
    const { state } = node;
    const error = snap.status === "error" ? String(snap.error instanceof Error ? snap.error.message : snap.error) : null;
    const base = { type: "actor_state", actorId: node.id, parentId: node.parentId, kind: node.kind, machine: node.machine, state, at: node.since, from, event: on } as const;
    if (!node.machine) return publish({ ...base, snapshot: null, error });
    // This state's snapshot is made when read.
    const status = snap.status ?? null;
    const context = snap.context;
    const lazy = new LazySnapshot(() => ({ status, context: redact(context) }), status);
    node.unread = lazy;
    const changed = lazyStateEvent(base, lazy, error);
    node.lastState = changed;
    publish(changed);
  }

  /** What XState reports of a watched system. */
  function onInspection(event: InspectionEvent) {
    stats.inspectionEvents++;
    // Actions and microsteps (a third of what XState reports) change nothing the tree shows.
    if (event.type === "@xstate.action" || event.type === "@xstate.microstep" || !watchers) return;
    const ref = event.actorRef as Internals;
    if (event.type === "@xstate.actor") {
      // A root is tracked by whoever follows it; a child as it is made, under its parent.
      const parent = ref._parent ? nodes.get(ref._parent.sessionId) : undefined;
      if (parent) track(ref, parent, "constructing");
      return;
    }
    const node = nodes.get(ref.sessionId);
    if (!node) return;
    if (event.type === "@xstate.event") {
      const type = (event.event as { type?: unknown }).type;
      // What reaches machines, not the init of every effect.
      if (node.machine && typeof type === "string" && type !== "xstate.init") {
        const source = event.sourceRef ? (nodes.get(event.sourceRef.sessionId)?.id ?? null) : null;
        publish({ type: "actor_event", actorId: node.id, parentId: node.parentId, kind: node.kind, machine: node.machine, state: node.state, at: now(), event: type, source });
      }
      return;
    }
    if (event.type !== "@xstate.snapshot") return;
    const cause = (event.event as { type?: unknown } | undefined)?.type;
    apply(node, event.snapshot as Snap, typeof cause === "string" ? cause : null);
  }

  return {
    stats,
    /** How many watch (an /api/events client each). */
    watching: () => watchers,
    /**
     * Follows the root of an actor system, created and not yet started: the supervisor (no id), or a
     * system of its own (a session, a subagent's turn) named `id` in the tree, under `under` (else
     * where `attachTo` says, else the supervisor).
     */
    follow(actor: AnyActorRef, id?: string, under?: string) {
      const node = track(actor as Internals, null, "unstarted", { id, under });
      if (watchers && !node.inspection && nodes.get(actor.sessionId) === node) node.inspection = actor.system.inspect(onInspection);
    },
    /**
     * Someone watches (an /api/events client): every live system is inspected and its changes are
     * published until the returned function is called (by the last watcher, of all that called this).
     */
    watch(): () => void {
      if (watchers++ === 0) {
        for (const root of roots) root.inspection = root.ref.system.inspect(onInspection);
        publish({ type: "actor_gap", from: unwatchedSince, at: now() });
      }
      let released = false;
      return () => {
        if (released) return;
        released = true;
        if (--watchers > 0) return;
        for (const root of roots) {
          root.inspection?.unsubscribe();
          root.inspection = undefined;
        }
        unwatchedSince = now();
      };
    },
    /** The live tree, rooted at the supervisor; actors of other systems hang under the actor they attach to (else the supervisor). */
    tree(extra: (root: ActorNode) => void = () => {}): ActorNode | undefined {
      const root = supervisor && nodes.get(supervisor.ref.sessionId) === supervisor ? supervisor : undefined;
      if (!root) return undefined;
      const node = treeView(root, roots, nodes.values());
      extra(node);
      return node;
    },
  };
}
export type ActorTree = ReturnType<typeof createActorTree>;
