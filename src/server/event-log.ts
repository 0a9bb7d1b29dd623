import type { Bus, EventOf } from "../bus/index.js";

export const INSPECTION_EVENT_TYPES = ["actor_spawned", "actor_stopped", "actor_state", "actor_event", "actor_gap"] as const;
export type InspectionBusEvent = EventOf<(typeof INSPECTION_EVENT_TYPES)[number]>;

export interface EventLogOptions {
  /** At most this many events are kept (the oldest go first). */
  maxEvents?: number;
  /** Events older than this are dropped. */
  maxAgeMs?: number;
  now?: () => number;
}

/**
 * The last minutes of actor events in a bounded ring buffer, so a client that connects late can replay them (`/api/events?since=`).
 * They are published only while someone watches (src/server/actor-tree.ts); an `actor_gap` marks a time nobody did.
 */
export function createEventLog(bus: Bus, opts: EventLogOptions = {}) {
  const maxEvents = opts.maxEvents ?? 10_000;
  const maxAgeMs = opts.maxAgeMs ?? 30 * 60_000;
  const now = opts.now ?? Date.now;
  const ring: Array<InspectionBusEvent | undefined> = new Array(maxEvents);
  let next = 0;
  let size = 0;
  const sub = bus.ofType(...INSPECTION_EVENT_TYPES).subscribe((e) => {
    ring[next] = e;
    next = (next + 1) % maxEvents;
    size = Math.min(size + 1, maxEvents);
  });
  return {
    maxAgeMs,
    /** Events of the last `ms` milliseconds (at most maxAgeMs), oldest first. */
    since(ms: number): InspectionBusEvent[] {
      const from = now() - Math.min(ms, maxAgeMs);
      const out: InspectionBusEvent[] = [];
      for (let i = 0; i < size; i++) {
        const e = ring[(next - size + i + maxEvents) % maxEvents]!;
        if (e.at >= from) out.push(e);
      }
      return out;
    },
    close: () => sub.unsubscribe(),
  };
}
export type EventLog = ReturnType<typeof createEventLog>;
