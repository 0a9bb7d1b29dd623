/**
 * Lists laid beside the ones worked on last, for what is worked out over a long history call after
 * call (its token sums, whether it is well formed): a session's history goes out as the same message
 * objects behind a new head (the system prompt, a new object every turn), cut at its start as the
 * window moves, a message swapped in the middle (microcompact clears a result), grown at its end.
 * A new list is laid beside the most recent kept list that holds one of its first elements, at that
 * offset; an element that is the same object as the one beside it takes what was made of that one.
 * One pass of identity checks, where working each message out again reads its properties
 * (megamorphic: users', assistants' and tools' messages differ in shape) or looks it up in a WeakMap.
 * Each list is kept as a copy, as it was (its caller may change it after). Messages are never
 * changed in place once made.
 */

/** How many first elements may anchor a list against a kept one (the head is new every turn). */
const ANCHORS = 3;
/** Fresh anchors tried after a mismatch (a message inserted or dropped moves the rest); bounded so a new list stays one pass. */
const REANCHORS = 8;

export interface KeptList<T> {
  items: readonly unknown[];
  /** What was made of each element (by index). */
  data: T;
}

/** A walk of a new list beside a kept one: `at(i)` is the kept index of the same object as items[i], or -1. */
export interface Beside<T> {
  kept: KeptList<T> | undefined;
  at(i: number): number;
}

export function keptLists<T>(limit: number) {
  const kept: Array<KeptList<T>> = [];
  return {
    /** The kept list that lines up best with `items`: anchored by one of its first elements, then checked at a few later places. */
    beside(items: readonly unknown[]): Beside<T> {
      const n = items.length;
      let prev: KeptList<T> | undefined;
      let off = 0;
      let best = -1;
      for (const k of kept) {
        for (let h = 0; h < Math.min(n, ANCHORS); h++) {
          const j = k.items.indexOf(items[h]);
          if (j < 0) continue;
          let score = 0;
          for (const at of [n >> 1, (3 * n) >> 2, n - 2]) if (at > h && k.items[at + j - h] === items[at]) score++;
          if (score > best) {
            best = score;
            prev = k;
            off = j - h;
          }
          break;
        }
      }
      let reanchors = REANCHORS;
      const keptItems = prev?.items ?? [];
      return {
        kept: prev,
        at(i) {
          const m = items[i];
          if (keptItems[i + off] === m) return i + off;
          if (!prev || reanchors <= 0) return -1;
          reanchors--;
          const j = prev.items.indexOf(m);
          if (j < 0) return -1;
          off = j - i;
          return j;
        },
      };
    },
    /** Keeps a copy of `items` with what was made of them; the oldest kept list goes past `limit`. */
    keep(items: readonly unknown[], data: T): void {
      if (kept.unshift({ items: items.slice(), data }) > limit) kept.pop();
    },
  };
}
