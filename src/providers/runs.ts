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
const VARIANTS = 3;
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
  // A few runs per start: the same history goes out as stored and as compacted (old tool results cleared), one after the other.
  const runs = new WeakMap<object, Array<{ items: readonly unknown[]; value: T }>>();
  return (items, at) => {
    const start = items[at] as object;
    let kept = runs.get(start);
    const hit = kept?.find((r) => r.items.every((item, k) => items[at + k] === item));
    if (hit) return hit.value;
    const run = items.slice(at, at + RUN);
    // Numbered as they are met, so the next run starts where this one ends.
    for (const item of run) if (isObject(item)) numberOf(item);
    const value = make(run);
    if (!kept) runs.set(start, (kept = []));
    if (kept.unshift({ items: run, value }) > VARIANTS) kept.pop();
    return value;
  };
}

/** Whether a run starts at `at` (RUN elements from an object numbered a multiple of RUN). */
export const startsRun = (items: readonly unknown[], at: number): boolean => {
  const item = items[at];
  return isObject(item) && at + RUN <= items.length && numberOf(item) % RUN === 0;
};
