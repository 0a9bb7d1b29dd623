/**
 * A line diff of two small texts (the memory files are a few hundred lines): the edit script from
 * a longest-common-subsequence table, grouped into unified-diff hunks.
 */

type Op = { kind: " " | "-" | "+"; line: string };

const splitLines = (text: string) => (text === "" ? [] : text.replace(/\n$/, "").split("\n"));

export function lineOps(before: string, after: string): Op[] {
  const a = splitLines(before);
  const b = splitLines(after);
  const n = a.length;
  const m = b.length;
  // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  const ops: Op[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      ops.push({ kind: " ", line: a[i++]! });
      j++;
    } else if (i < n && (j >= m || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) {
      ops.push({ kind: "-", line: a[i++]! });
    } else {
      ops.push({ kind: "+", line: b[j++]! });
    }
  }
  return ops;
}

export function lineCounts(before: string, after: string): { added: number; removed: number } {
  const ops = lineOps(before, after);
  return { added: ops.filter((o) => o.kind === "+").length, removed: ops.filter((o) => o.kind === "-").length };
}

/** Unified-diff hunks (without the file header), `context` lines around each change. */
export function unifiedHunks(before: string, after: string, context = 2): string[] {
  const ops = lineOps(before, after);
  const changed = ops.map((o, k) => (o.kind === " " ? -1 : k)).filter((k) => k >= 0);
  if (!changed.length) return [];
  const out: string[] = [];
  let k = 0;
  while (k < changed.length) {
    const start = Math.max(0, changed[k]! - context);
    let end = Math.min(ops.length, changed[k]! + context + 1);
    while (k + 1 < changed.length && changed[k + 1]! - context <= end) end = Math.min(ops.length, changed[++k]! + context + 1);
    k++;
    let oldStart = 1;
    let newStart = 1;
    for (const o of ops.slice(0, start)) {
      if (o.kind !== "+") oldStart++;
      if (o.kind !== "-") newStart++;
    }
    const body = ops.slice(start, end);
    const oldLines = body.filter((o) => o.kind !== "+").length;
    const newLines = body.filter((o) => o.kind !== "-").length;
    out.push(`@@ -${oldLines ? oldStart : oldStart - 1},${oldLines} +${newLines ? newStart : newStart - 1},${newLines} @@`, ...body.map((o) => `${o.kind}${o.line}`));
  }
  return out;
}
