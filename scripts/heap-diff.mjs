// What grew between two V8 heap snapshots (.heapsnapshot: `npm run bench:soak` writes them with
// TROUPE_SOAK_SNAPSHOTS=4,10). Run by hand, with room for both: the JSON is parsed whole.
//   node --max-old-space-size=8000 scripts/heap-diff.mjs A.heapsnapshot B.heapsnapshot [--top N] [--held-by WHAT]
// Prints count and self size by constructor (or node type) in B against A, largest growth first.
// --held-by groups B's nodes that match WHAT by their shortest retainer path from the GC roots (numbers
// in the path folded to N): WHAT is a property name (objects having it: `role` finds chat messages),
// `type:<node type>` (`type:string`, `type:object shape`) or `name:<constructor>`.
import { readFileSync } from "node:fs";

function load(file) {
  const s = JSON.parse(readFileSync(file, "utf8"));
  const meta = s.snapshot.meta;
  const NF = meta.node_fields.length;
  const EF = meta.edge_fields.length;
  const f = (name) => meta.node_fields.indexOf(name);
  const h = { nodes: s.nodes, edges: s.edges, strings: s.strings, NF, EF, nodeTypes: meta.node_types[0], edgeTypes: meta.edge_types[0], iType: f("type"), iName: f("name"), iSize: f("self_size"), iEdges: f("edge_count") };
  h.n = h.nodes.length / NF;
  h.first = new Uint32Array(h.n + 1);
  for (let i = 0, e = 0; i < h.n; i++) {
    h.first[i] = e;
    e += h.nodes[i * NF + h.iEdges] * EF;
    h.first[i + 1] = e;
  }
  return h;
}
const typeOf = (h, i) => h.nodeTypes[h.nodes[i * h.NF + h.iType]];
const nameOf = (h, i) => String(h.strings[h.nodes[i * h.NF + h.iName]]);
const sizeOf = (h, i) => h.nodes[i * h.NF + h.iSize];
function label(h, i) {
  const t = typeOf(h, i);
  return t === "object" || t === "closure" ? `${t}:${nameOf(h, i).slice(0, 40)}` : t === "native" ? `native:${nameOf(h, i).slice(0, 40)}` : t;
}
function byLabel(h) {
  const out = new Map();
  for (let i = 0; i < h.n; i++) {
    const k = label(h, i);
    const a = out.get(k) ?? { count: 0, size: 0 };
    a.count++;
    a.size += sizeOf(h, i);
    out.set(k, a);
  }
  return out;
}
/** Shortest paths from the root (node 0) over strong edges: each node's parent and the edge to it. */
function shortestPaths(h) {
  const parent = new Int32Array(h.n).fill(-1);
  const via = new Int32Array(h.n).fill(-1);
  const queue = new Uint32Array(h.n);
  let head = 0;
  let tail = 0;
  parent[0] = 0;
  queue[tail++] = 0;
  while (head < tail) {
    const i = queue[head++];
    for (let e = h.first[i]; e < h.first[i + 1]; e += h.EF) {
      const kind = h.edgeTypes[h.edges[e]];
      if (kind === "weak" || kind === "shortcut") continue;
      const to = h.edges[e + 2] / h.NF;
      if (parent[to] !== -1) continue;
      parent[to] = i;
      via[to] = e;
      queue[tail++] = to;
    }
  }
  return { parent, via };
}
function matcher(h, what) {
  if (what.startsWith("type:")) return (i) => typeOf(h, i) === what.slice(5);
  if (what.startsWith("name:")) return (i) => nameOf(h, i) === what.slice(5);
  return (i) => {
    if (typeOf(h, i) !== "object") return false;
    for (let e = h.first[i]; e < h.first[i + 1]; e += h.EF) if (h.edgeTypes[h.edges[e]] === "property" && h.strings[h.edges[e + 1]] === what) return true;
    return false;
  };
}
function heldBy(h, what, top, depth = 7) {
  const { parent, via } = shortestPaths(h);
  const match = matcher(h, what);
  const groups = new Map();
  for (let i = 0; i < h.n; i++) {
    if (!match(i)) continue;
    const hops = [];
    for (let j = i, d = 0; j !== 0 && parent[j] !== -1 && d < depth; j = parent[j], d++) {
      const e = via[j];
      const kind = h.edgeTypes[h.edges[e]];
      const edge = kind === "element" || kind === "hidden" ? "[]" : String(h.strings[h.edges[e + 1]]).slice(0, 25);
      hops.push(`${edge}<-${label(h, parent[j])}`);
    }
    // Numbers folded: array indices, and a WeakMap entry's "<index> / part of key (<key> @<id>) -> value" name.
    const k = hops.join(" ").replace(/\d+ \/ part of key \([^<]*</g, "entry<").replace(/\b\d+</g, "N<");
    const g = groups.get(k) ?? { count: 0, size: 0 };
    g.count++;
    g.size += sizeOf(h, i);
    groups.set(k, g);
  }
  console.log(`\n${what}: held by (shortest path from the GC roots)`);
  for (const [k, g] of [...groups].sort((a, b) => b[1].size - a[1].size).slice(0, top)) console.log(`${String(g.count).padStart(8)} ${(g.size / 1e6).toFixed(2).padStart(7)} MB  ${k}`);
}

const args = process.argv.slice(2);
const opt = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const [fileA, fileB] = args.filter((a, i) => !a.startsWith("--") && !args[i - 1]?.startsWith("--"));
if (!fileA || !fileB) {
  console.error("usage: node --max-old-space-size=8000 scripts/heap-diff.mjs A.heapsnapshot B.heapsnapshot [--top N] [--held-by WHAT]");
  process.exit(2);
}
const top = Number(opt("--top") ?? 30);
const a = byLabel(load(fileA));
const b = load(fileB);
const bAgg = byLabel(b);
const total = (m) => [...m.values()].reduce((n, x) => n + x.size, 0);
console.log(`self size of all nodes: ${(total(a) / 1e6).toFixed(1)} → ${(total(bAgg) / 1e6).toFixed(1)} MB`);
const rows = [...new Set([...a.keys(), ...bAgg.keys()])].map((k) => {
  const x = a.get(k) ?? { count: 0, size: 0 };
  const y = bAgg.get(k) ?? { count: 0, size: 0 };
  return { k, count: y.count - x.count, size: y.size - x.size, now: y.size };
});
console.log("growth (self size, count), then the size in B:");
for (const r of rows.sort((p, q) => q.size - p.size).slice(0, top)) console.log(`${(r.size / 1e6).toFixed(2).padStart(8)} MB ${String(r.count).padStart(9)}   ${(r.now / 1e6).toFixed(1).padStart(6)} MB  ${r.k}`);
const held = opt("--held-by");
if (held) heldBy(b, held, top);
