import { Subject, filter, type Observable } from "rxjs";
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

export function createBus(): Bus {
  const subject = new Subject<BusEvent>();
  return {
    events$: subject.asObservable(),
    publish: (event) => subject.next(event),
    publishUntrusted(input) {
      const parsed = parseEvent(input);
      if (!parsed.ok) return parsed;
      subject.next(parsed.event);
      return { ok: true };
    },
    ofType<T extends BusEventType>(...types: T[]) {
      const wanted = new Set<BusEventType>(types);
      return subject.pipe(filter((e): e is EventOf<T> => wanted.has(e.type)));
    },
    close: () => subject.complete(),
  };
}
