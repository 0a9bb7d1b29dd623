/**
 * The order `a.localeCompare(b)` gives names, without calling it for the usual ones: its first call
 * loads ICU's collation data, 2.5 MB of peak RSS and some CPU at every start of a one-shot command
 * (skills and tools are sorted by name at each turn). Names made of lowercase ASCII letters, digits
 * and `_ - : .` (skill folders, tool names, message ids) have one weight per character in ICU's root
 * collation, in this order (`_` `-` `:` `.`, the digits, the letters), so comparing the weights in
 * turn gives its answer; any other name goes to localeCompare.
 */
const RANKS = "_-:.0123456789abcdefghijklmnopqrstuvwxyz";
const rank = new Int8Array(128).fill(-1);
for (let i = 0; i < RANKS.length; i++) rank[RANKS.charCodeAt(i)] = i;

const weight = (s: string, i: number) => {
  const c = s.charCodeAt(i);
  return c < 128 ? rank[c]! : -1;
};

export function compareNames(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = weight(a, i);
    const y = weight(b, i);
    if (x < 0 || y < 0) return a.localeCompare(b);
    if (x !== y) return x < y ? -1 : 1;
  }
  for (let i = n; i < a.length; i++) if (weight(a, i) < 0) return a.localeCompare(b);
  for (let i = n; i < b.length; i++) if (weight(b, i) < 0) return a.localeCompare(b);
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}
