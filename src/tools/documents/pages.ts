/** A `pages` argument ("1-3,7") read into the 1-based page numbers it names, in order, each once. */
export class PageRangeError extends Error {}

export function parsePageRange(spec: string, totalPages: number): number[] {
  const pages = new Set<number>();
  for (const part of spec.split(",")) {
    const m = /^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$/.exec(part);
    if (!m) throw new PageRangeError(`"${part.trim()}" is not a page or a range`);
    const start = Number(m[1]);
    const end = m[2] === undefined ? start : Number(m[2]);
    if (start < 1 || end < start) throw new PageRangeError(`${part.trim()} is not a range from a lower to a higher page`);
    if (start > totalPages) throw new PageRangeError(`page ${start} is past the last page (${totalPages})`);
    for (let p = start; p <= Math.min(end, totalPages); p++) pages.add(p);
  }
  return [...pages].sort((a, b) => a - b);
}

/** "1-3,7" for [1, 2, 3, 7]: the pages shown, said back the way they can be asked for. */
export function formatPageRange(pages: number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < pages.length; ) {
    let j = i;
    while (j + 1 < pages.length && pages[j + 1] === pages[j]! + 1) j++;
    parts.push(i === j ? `${pages[i]}` : `${pages[i]}-${pages[j]}`);
    i = j + 1;
  }
  return parts.join(",");
}
