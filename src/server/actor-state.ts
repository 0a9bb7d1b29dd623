import type { BusEvent } from "../bus/index.js";

/**
 * What the actor tree's state events carry (src/server/actor-tree.ts): an actor's state as a name,
 * and its snapshot, made (redacted) only when someone reads it.
 */

export type StateEvent = Extract<BusEvent, { type: "actor_state" }>;
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
export class LazySnapshot {
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

/** A machine's state event whose snapshot is `lazy`'s, read through a getter of the event's own object literal. */
export function lazyStateEvent(base: Omit<StateEvent, "snapshot" | "error">, lazy: LazySnapshot, error: string | null): StateEvent {
  return {
    ...base,
    get snapshot() {
      return lazy.get();
    },
    error,
  };
}

/** The event's snapshot made now and kept as a plain value (an actor's last state, when it stops). */
export function settle(event: StateEvent, lazy: LazySnapshot): void {
  Object.defineProperty(event, "snapshot", { value: lazy.get(), enumerable: true, configurable: true, writable: true });
}

/** "active.running" for a nested machine state; the actor status for other logic (and for a machine stopped or failed). */
const flat = (v: unknown): string =>
  typeof v === "string" ? v : v && typeof v === "object" ? Object.entries(v).map(([k, sub]) => `${k}.${flat(sub)}`).join(",") : String(v);

export function stateName(snapshot: { value?: unknown; status?: string }): string {
  // A machine that finished is in its final state (responded, passivated…), which says more than "done".
  return snapshot.value !== undefined && (snapshot.status === "active" || snapshot.status === "done") ? flat(snapshot.value) : (snapshot.status ?? "unknown");
}
