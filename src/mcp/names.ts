import { createHash } from "node:crypto";

/** What model APIs accept in a function name. */
const MAX_NAME = 64;

/** Anything outside [a-zA-Z0-9_-] becomes "_", runs of "_" collapse. */
export const sanitizeName = (name: string) => name.replace(/[^a-zA-Z0-9_-]/g, "_").replace(/_+/g, "_");

/** Sanitised, and a name past 64 characters cut with a short hash of the whole so two long names stay apart. */
export function toolNameFor(raw: string): string {
  const name = sanitizeName(raw);
  if (name.length <= MAX_NAME) return name;
  const digest = createHash("sha1").update(name).digest("hex").slice(0, 8);
  return `${name.slice(0, MAX_NAME - digest.length - 1)}_${digest}`;
}

export const mcpToolName = (server: string, tool: string) => toolNameFor(`mcp_${server}_${tool}`);
export const mcpResourceToolName = (server: string) => toolNameFor(`mcp_${server}_read_resource`);
export const mcpPromptToolName = (server: string, prompt: string) => toolNameFor(`mcp_${server}_prompt_${prompt}`);

/**
 * enabledTools: ["*"] everything, [] nothing, else tools named raw ("read") or wrapped
 * ("mcp_fs_read"). Resources and prompts come only with "*" or when their wrapped name is listed.
 */
export function enabledFilter(enabled: string[]) {
  const all = enabled.includes("*");
  const set = new Set(enabled);
  return {
    tool: (raw: string, wrapped: string) => all || set.has(raw) || set.has(wrapped),
    extra: (wrapped: string) => all || set.has(wrapped),
    /** Entries that matched none of the offered names (a typo, or a tool the server dropped). */
    unmatched: (raws: string[], wrapped: string[]) => (all ? [] : enabled.filter((e) => !raws.includes(e) && !wrapped.includes(e))),
  };
}

/** Makes each name unique within one server's tools: a second "a.b" and "a_b" becomes "a_b_2". */
export function uniqueNames(names: string[]): string[] {
  const seen = new Set<string>();
  return names.map((name) => {
    let candidate = name;
    for (let i = 2; seen.has(candidate); i++) candidate = toolNameFor(`${name.slice(0, MAX_NAME - 4)}_${i}`);
    seen.add(candidate);
    return candidate;
  });
}
