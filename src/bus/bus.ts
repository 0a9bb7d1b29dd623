import { merge, Subject, type Observable } from "rxjs";
import { parseEvent, type BusEvent, type BusEventType, type EventOf } from "./events.js";

export interface Bus {
  /** Every event, hot: subscribers see what is published after they subscribe. */
  readonly events$: Observable<BusEvent>;
  publish(event: BusEvent): void;
  /** Parses input from outside the process; an invalid event is refused with the reason. */
  publishUntrusted(input: unknown): { ok: true } | { ok: false; error: string };
  ofType<T extends BusEventType>(...types: T[]): Observable<EventOf<T>>;
  close(): void;
}

/**
 * One stream per event type, so an event reaches only the subscribers of its type: a turn publishes
 * dozens of events (actor changes, progress, turn states), and with one stream every subscriber's
 * filter ran on every one of them.
 */
export function createBus(): Bus {
  const all = new Subject<BusEvent>();
  const byType = new Map<BusEventType, Subject<BusEvent>>();
  let closed = false;
  const typed = (type: BusEventType): Subject<BusEvent> => {
    let subject = byType.get(type);
    if (!subject) {
      subject = new Subject<BusEvent>();
      if (closed) subject.complete();
      byType.set(type, subject);
    }
    return subject;
  };
  const publish = (event: BusEvent) => {
    if (all.observed) all.next(event);
    byType.get(event.type)?.next(event);
  };
  return {
    events$: all.asObservable(),
    publish,
    publishUntrusted(input) {
      const parsed = parseEvent(input);
      if (!parsed.ok) return parsed;
      publish(parsed.event);
      return { ok: true };
    },
    ofType<T extends BusEventType>(...types: T[]) {
      const streams = [...new Set(types)].map((t) => typed(t).asObservable() as Observable<EventOf<T>>);
      return streams.length === 1 ? streams[0]! : merge(...streams);
    },
    close() {
      closed = true;
      all.complete();
      for (const subject of byType.values()) subject.complete();
    },
  };
}
