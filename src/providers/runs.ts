/**
 * Runs of a message list, for what is worked out over a long history call after call (its request
 * bytes; token sums lay whole lists side by side instead: aligned.ts): a session sends the same
 * message objects again and again, its history
 * growing at its end and cut at its start, so what was made of a run of them is reused while the
 * same objects follow one another again.
 *
 * Every object met gets a number, in the order first met; one numbered a multiple of RUN is a
 * boundary. A run goes from where the walk is up to the next boundary (at most MAX_RUN elements), so
 * runs follow one another without gaps, and after a change or a cut start the walk is back on the
 * runs already kept at the next boundary: a list's runs depend on its objects, not where it starts.
 * What was made of a run is kept with its elements and used again only when the same objects follow
 * its first one (checked by identity: a list that changed there is worked out afresh). A run is
 * never made up to the list's end (that end changes every call). Messages are never changed in place
 * once made.
 */
const RUN = 32;
const MAX_RUN = 2 * RUN;
/** Runs kept per first element: the same history goes out as stored and as compacted (old tool results cleared). */
const VARIANTS = 3;
const firstMet = new WeakMap<object, number>();
let met = 0;

const isObject = (v: unknown): v is object => typeof v === "object" && v !== null;

function isBoundary(item: unknown): boolean {
  if (!isObject(item)) return false;
  let n = firstMet.get(item);
  if (n === undefined) firstMet.set(item, (n = met++));
  return n % RUN === 0;
}

/** Lets go of an object's number at once (see memory/side-data.ts); met again, it gets a new one (its runs are made afresh). */
export const forgetMet = (item: object): boolean => firstMet.delete(item);

/** What `make` gives for the run starting at `at`, with its length; undefined when no run starts there. */
export type RunAt<T> = (items: readonly unknown[], at: number) => { value: T; length: number } | undefined;

export function runCache<T>(make: (run: readonly unknown[]) => T): RunAt<T> {
  const runs = new WeakMap<object, Array<{ items: readonly unknown[]; value: T }>>();
  return (items, at) => {
    const first = items[at];
    if (!isObject(first)) return undefined;
    let kept = runs.get(first);
    const hit = kept?.find((r) => at + r.items.length < items.length && r.items.every((item, k) => items[at + k] === item));
    if (hit) return { value: hit.value, length: hit.items.length };
    // A run starts anywhere and ends at the next boundary: a walk that met a changed element is back on the kept runs from there.
    let end = at + 1;
    while (end < items.length && end - at < MAX_RUN && !isBoundary(items[end])) end++;
    if (end >= items.length) return undefined;
    const run = items.slice(at, end);
    const value = make(run);
    if (!kept) runs.set(first, (kept = []));
    if (kept.unshift({ items: run, value }) > VARIANTS) kept.pop();
    return { value, length: run.length };
  };
}
