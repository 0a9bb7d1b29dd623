/**
 * Runs of a message list, for what is worked out over a long history call after call (its request
 * bytes, its token counts): a session sends the same message objects again and again, its history
 * growing at its end and cut at its start, so what was made of a run of them is reused while the
 * same objects follow one another again.
 *
 * Every object met gets a number, in the order first met. A run starts at an object whose number is
 * a multiple of RUN and spans the RUN elements from it in the list; what was made of it is kept with
 * those elements and used again only when the same RUN objects follow it (checked by identity, so a
 * list that changed there is worked out afresh). Messages are never changed in place once made.
 */
export const RUN = 32;
const firstMet = new WeakMap<object, number>();
let met = 0;

function numberOf(item: object): number {
  let n = firstMet.get(item);
  if (n === undefined) firstMet.set(item, (n = met++));
  return n;
}

const isObject = (v: unknown): v is object => typeof v === "object" && v !== null;

/** What `make` gives for the run at `at` (kept per run) — call where `startsRun` says one starts. */
export function runCache<T>(make: (run: readonly unknown[]) => T): (items: readonly unknown[], at: number) => T {
  const runs = new WeakMap<object, { items: readonly unknown[]; value: T }>();
  return (items, at) => {
    const start = items[at] as object;
    const kept = runs.get(start);
    if (kept && kept.items.every((item, k) => items[at + k] === item)) return kept.value;
    const run = items.slice(at, at + RUN);
    // Numbered as they are met, so the next run starts where this one ends.
    for (const item of run) if (isObject(item)) numberOf(item);
    const value = make(run);
    runs.set(start, { items: run, value });
    return value;
  };
}

/** Whether a run starts at `at` (RUN elements from an object numbered a multiple of RUN). */
export const startsRun = (items: readonly unknown[], at: number): boolean => {
  const item = items[at];
  return isObject(item) && at + RUN <= items.length && numberOf(item) % RUN === 0;
};
