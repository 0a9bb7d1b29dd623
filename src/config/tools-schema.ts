import { z } from "zod";
import { addressOrCidr, flag, isHttpUrl, MAX_TIMER_SECONDS, optionalText, positive, positiveInt, regexString, text, textRecord, texts } from "./schema-fields.js";

/** config.json's tools section (tools.*): web, exec, the workspace restriction, MCP servers. */

/**
 * One MCP server (nanobot's shape): stdio {command, args, env, cwd} or remote {url, headers}.
 * `type` may be left out: a url ending in /sse is SSE, another url streamable HTTP, a command stdio.
 */
const mcpServerSchema = z
  .object({
    type: z.enum(["stdio", "sse", "streamableHttp"]).nullable().default(null),
    command: text.default(""),
    args: texts.default([]),
    env: textRecord.default({}),
    cwd: optionalText.default(null),
    url: text.default(""),
    headers: textRecord.default({}),
    /** Seconds one call may take before it is cancelled. */
    toolTimeout: positive.default(30),
    /** ["*"] all (the default), [] none, else tool names raw ("read") or wrapped ("mcp_fs_read"). */
    enabledTools: texts.default(["*"]),
  })
  .superRefine((s, ctx) => {
    const problem = (message: string, path: string) => ctx.addIssue({ code: "custom", message, path: [path] });
    if (!s.command && !s.url) return problem('needs a "command" (a stdio server) or a "url" (a remote server)', "command");
    if (s.command && s.url) return problem('has both "command" and "url"; keep one (command for stdio, url for SSE or streamable HTTP)', "url");
    if (s.url && !isHttpUrl(s.url)) return problem(`${JSON.stringify(s.url)} is not an http(s) URL (e.g. http://127.0.0.1:3001/mcp)`, "url");
    if (s.type === "stdio" && !s.command) return problem('type "stdio" needs a "command"', "command");
    if ((s.type === "sse" || s.type === "streamableHttp") && !s.url) return problem(`type "${s.type}" needs a "url"`, "url");
  });
export type McpServerConfig = z.infer<typeof mcpServerSchema>;

export const toolsSchema = z.object({
  web: z
    .object({
      /** false leaves web_fetch and web_search out (nanobot's tools.web.enable). */
      enable: flag.default(true),
      /** Every web_search and web_fetch request goes through this http(s) proxy. */
      proxy: optionalText.default(null),
      /** The User-Agent of web_search and web_fetch requests (nanobot's browser-like one when null). */
      userAgent: optionalText.default(null),
      search: z
        .object({
          /** brave, tavily, searxng (baseUrl), jina or duckduckgo; without its key (or on failure) DuckDuckGo answers. */
          provider: text.default("brave"),
          apiKey: text.default(""),
          /** SearXNG's address (or SEARXNG_BASE_URL). */
          baseUrl: text.default(""),
          /** Results per search; clamped to 1–10 as nanobot does. */
          maxResults: z.number().int().default(5),
          /** Seconds a search provider may take. */
          timeout: positive.default(30),
        })
        .prefault({}),
    })
    .prefault({}),
  exec: z
    .object({
      /** false leaves the exec tool out (nanobot's tools.exec.enable). */
      enable: flag.default(true),
      /** Seconds a command may run unless the call gives its own timeout; 0 = no limit; not capped at 600 (nanobot v0.3.0). */
      timeout: z
        .number()
        .int()
        .min(0, "must be a number of seconds, not negative; use 0 for no limit")
        .max(MAX_TIMER_SECONDS, `must be at most ${MAX_TIMER_SECONDS} seconds (about 24 days); use 0 for no limit`)
        .default(60),
      pathAppend: text.default(""),
      allowedEnvKeys: texts.default([]),
      denyPatterns: z.array(regexString).default([]),
      allowPatterns: z.array(regexString).default([]),
      /** With restrictToWorkspace: "auto" sandboxes commands with bubblewrap when bwrap is on PATH. */
      // nanobot writes "" (no backend chosen) here: troupe reads that as its default.
      sandbox: z.preprocess((v) => (v === "" ? undefined : v), z.enum(["auto", "bwrap", "none"]).default("auto")),
    })
    .prefault({}),
  restrictToWorkspace: flag.default(true),
  /** When restricted, file tools refuse a file with several names (a hard link may name one outside) unless this is on. */
  allowHardLinks: flag.default(false),
  maxToolResultChars: positiveInt.default(16_000),
  ssrfWhitelist: z.array(addressOrCidr).default([]),
  mcpServers: z.record(text, mcpServerSchema).default({}),
});
