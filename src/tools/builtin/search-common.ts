/** What glob and grep share with nanobot's search tools: file types, paging and its note. */

export const DEFAULT_HEAD_LIMIT = 250;

/** nanobot's `type` shorthands; any other value is taken as an extension (`type: "lua"` → *.lua). */
const TYPE_EXTENSIONS: Record<string, string[]> = {
  py: ["py", "pyi"],
  python: ["py", "pyi"],
  js: ["js", "jsx", "mjs", "cjs"],
  ts: ["ts", "tsx", "mts", "cts"],
  tsx: ["tsx"],
  jsx: ["jsx"],
  json: ["json"],
  md: ["md", "mdx"],
  markdown: ["md", "mdx"],
  go: ["go"],
  rs: ["rs"],
  rust: ["rs"],
  java: ["java"],
  sh: ["sh", "bash"],
  yaml: ["yaml", "yml"],
  yml: ["yaml", "yml"],
  toml: ["toml"],
  sql: ["sql"],
  html: ["html", "htm"],
  css: ["css", "scss", "sass"],
};

/** Whether a file name is of the `type` asked for (no type: every file). */
export function matchesType(name: string, type: string | undefined): boolean {
  const wanted = type?.trim().toLowerCase().replace(/^\*?\./, "");
  if (!wanted) return true;
  const lower = name.toLowerCase();
  return (TYPE_EXTENSIONS[wanted] ?? [wanted]).some((ext) => lower.endsWith(`.${ext}`));
}

/**
 * A pattern without a slash matches a name at any depth, as in nanobot (`*.py` finds src/app.py);
 * one with a slash or a leading `**` is matched against the path from the search directory.
 */
export const anyDepth = (pattern: string): string => {
  const p = pattern.trim().replace(/\\/g, "/");
  return p.includes("/") || p.startsWith("**") ? p : `**/${p}`;
};

/** head_limit as nanobot reads it: 0 is no limit; the legacy alias applies when head_limit is not given. */
export const limitOf = (headLimit: number | undefined, legacy: number | undefined): number | undefined =>
  headLimit !== undefined ? (headLimit === 0 ? undefined : headLimit) : (legacy ?? DEFAULT_HEAD_LIMIT);

export function paginate<T>(items: T[], limit: number | undefined, offset: number): { page: T[]; truncated: boolean } {
  if (limit === undefined) return { page: items.slice(offset), truncated: false };
  return { page: items.slice(offset, offset + limit), truncated: items.length > offset + limit };
}

/** nanobot's note under a paged result: "(pagination: limit=N, offset=M)" when more is left. */
export function paginationNote(limit: number | undefined, offset: number, truncated: boolean): string | undefined {
  if (truncated) return limit === undefined ? `(pagination: offset=${offset})` : `(pagination: limit=${limit}, offset=${offset})`;
  return offset > 0 ? `(pagination: offset=${offset})` : undefined;
}
