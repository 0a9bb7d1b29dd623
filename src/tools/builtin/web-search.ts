import { z } from "zod";
import { lazySchema } from "../../lazy-schema.js";
import { defineTool, ToolError } from "../contract.js";
import { httpText } from "../web-proxy.js";

/** One result as every provider is read into: nanobot's {title, url, content}. */
export interface SearchItem {
  title: string;
  url: string;
  content: string;
}

export const SEARCH_PROVIDERS = ["brave", "tavily", "searxng", "jina", "duckduckgo"] as const;
/** nanobot's other providers: troupe answers their searches from DuckDuckGo and says so. */
const NANOBOT_ONLY_PROVIDERS = ["kagi", "exa", "olostep", "bocha", "volcengine", "keenable", "serper"];

export const DEFAULT_ENDPOINTS = {
  brave: "https://api.search.brave.com/res/v1/web/search",
  tavily: "https://api.tavily.com/search",
  jina: "https://s.jina.ai",
  duckduckgo: "https://html.duckduckgo.com/html/",
};
export type SearchEndpoints = typeof DEFAULT_ENDPOINTS;

/** Endpoint overrides for tests only (fake servers on 127.0.0.1): TROUPE_TEST_<PROVIDER>_URL. */
export function testEndpoints(env: NodeJS.ProcessEnv): Partial<SearchEndpoints> {
  const out: Partial<SearchEndpoints> = {};
  for (const name of Object.keys(DEFAULT_ENDPOINTS) as (keyof SearchEndpoints)[]) {
    const value = env[`TROUPE_TEST_${name.toUpperCase()}_URL`];
    if (value) out[name] = value;
  }
  return out;
}

export interface WebSearchOptions {
  /** tools.web.search: provider, apiKey, baseUrl (SearXNG), maxResults, timeout (seconds). */
  provider: string;
  apiKey: string;
  baseUrl: string;
  maxResults: number;
  timeoutS?: number;
  /** tools.web.proxy and tools.web.userAgent. */
  proxy?: string | null;
  userAgent?: string | null;
  /** Where BRAVE_API_KEY, TAVILY_API_KEY, JINA_API_KEY and SEARXNG_BASE_URL are read. */
  env?: NodeJS.ProcessEnv;
  endpoints?: Partial<SearchEndpoints>;
  sleep?: (ms: number) => Promise<void>;
}

export const DEFAULT_USER_AGENT = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_7_2) AppleWebKit/537.36";

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " " };
const unescapeHtml = (s: string) =>
  s.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name[0] === "#") {
      const code = name[1]?.toLowerCase() === "x" ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      return Number.isFinite(code) && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[name.toLowerCase()] ?? whole;
  });

/** nanobot's _strip_tags and _normalize: tags and scripts out, entities decoded, whitespace tidied. */
export function plainText(html: string): string {
  const text = unescapeHtml(
    html
      .replace(/<script[\s\S]*?<\/script>/gi, "")
      .replace(/<style[\s\S]*?<\/style>/gi, "")
      .replace(/<[^>]+>/g, ""),
  ).trim();
  return text.replace(/[ \t]+/g, " ").replace(/\n{3,}/g, "\n\n").trim();
}

/** nanobot's result text: "Results for: q", then "1. title", the URL and the snippet, indented. */
export function formatResults(query: string, items: SearchItem[], n: number): string {
  if (items.length === 0) return `No results for: ${query}`;
  const lines = [`Results for: ${query}\n`];
  items.slice(0, n).forEach((item, i) => {
    const snippet = plainText(item.content);
    lines.push(`${i + 1}. ${plainText(item.title)}\n   ${item.url}`);
    if (snippet) lines.push(`   ${snippet}`);
  });
  return lines.join("\n");
}

const str = lazySchema(() => z.string().nullish().transform((s) => s ?? ""));
const braveAnswer = lazySchema(() => z.object({ web: z.object({ results: z.array(z.object({ title: str, url: str, description: str })).default([]) }).optional() }));
const itemsAnswer = lazySchema(() => z.object({ results: z.array(z.object({ title: str, url: str, content: str })).default([]) }));
const jinaAnswer = lazySchema(() => z.object({ data: z.array(z.object({ title: str, url: str, content: str })).default([]) }));

/** A provider that did not answer as it should: the search falls back to DuckDuckGo. */
class ProviderFailed extends Error {}

function parseJson<T>(text: string, schema: z.ZodType<T>, who: string): T {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new ProviderFailed(`${who} did not answer with JSON`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new ProviderFailed(`${who} answered in a shape troupe does not understand`);
  return parsed.data;
}

/** DuckDuckGo's HTML page needs no key; its links go through a redirector carrying the target in `uddg`. */
export async function parseDuckDuckGo(html: string): Promise<SearchItem[]> {
  const { parseHTML } = await import("linkedom");
  const { document } = parseHTML(html);
  return [...document.querySelectorAll(".result")].flatMap((node) => {
    const link = node.querySelector("a.result__a");
    if (!link) return [];
    const href = link.getAttribute("href") ?? "";
    let url = href;
    try {
      const target = new URL(href, "https://duckduckgo.com").searchParams.get("uddg");
      if (target) url = target;
    } catch {
      // Keep the raw href.
    }
    const content = node.querySelector(".result__snippet")?.textContent?.trim() ?? "";
    return [{ title: link.textContent?.trim() ?? url, url, content }];
  });
}

export function webSearchTool(opts: WebSearchOptions) {
  const env = opts.env ?? process.env;
  const endpoints = { ...DEFAULT_ENDPOINTS, ...opts.endpoints };
  const timeoutMs = (opts.timeoutS ?? 30) * 1000;
  const userAgent = opts.userAgent || DEFAULT_USER_AGENT;
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));

  async function call(url: string | URL, who: string, signal: AbortSignal, init: { method?: "GET" | "POST"; headers?: Record<string, string>; json?: unknown } = {}) {
    let res: { status: number; text: string };
    try {
      res = await httpText(url, { ...init, headers: { "user-agent": userAgent, ...init.headers }, proxy: opts.proxy, signal, timeoutMs });
    } catch (err) {
      if (signal.aborted) throw err;
      throw new ProviderFailed(`${who} could not be reached: ${(err as Error).message}`);
    }
    if (res.status < 200 || res.status >= 300) {
      throw new ProviderFailed(`${who} answered ${res.status}${res.status === 429 ? " (rate limited)" : ""}: ${res.text.slice(0, 200)}`);
    }
    return res.text;
  }

  const providers = {
    async brave(query: string, n: number, key: string, signal: AbortSignal) {
      const url = new URL(endpoints.brave);
      url.searchParams.set("q", query);
      url.searchParams.set("count", String(n));
      const headers = { accept: "application/json", "x-subscription-token": key };
      let text: string;
      try {
        text = await call(url, "Brave search", signal, { headers });
      } catch (err) {
        // One retry after a second when rate limited, as nanobot does.
        if (!(err instanceof ProviderFailed) || !/ 429 /.test(err.message)) throw err;
        await sleep(1_000);
        text = await call(url, "Brave search", signal, { headers });
      }
      const results = parseJson(text, braveAnswer, "Brave search").web?.results ?? [];
      return results.map((r) => ({ title: r.title, url: r.url, content: r.description }));
    },
    async tavily(query: string, n: number, key: string, signal: AbortSignal) {
      const text = await call(endpoints.tavily, "Tavily", signal, { method: "POST", headers: { authorization: `Bearer ${key}` }, json: { query, max_results: n } });
      return parseJson(text, itemsAnswer, "Tavily").results;
    },
    async searxng(query: string, _n: number, baseUrl: string, signal: AbortSignal) {
      const url = new URL(`${baseUrl.replace(/\/+$/, "")}/search`);
      url.searchParams.set("q", query);
      url.searchParams.set("format", "json");
      return parseJson(await call(url, "SearXNG", signal, { headers: { accept: "application/json" } }), itemsAnswer, "SearXNG").results;
    },
    async jina(query: string, n: number, key: string, signal: AbortSignal) {
      const url = `${endpoints.jina.replace(/\/+$/, "")}/${encodeURIComponent(query)}`;
      const text = await call(url, "Jina search", signal, { headers: { accept: "application/json", authorization: `Bearer ${key}` } });
      return parseJson(text, jinaAnswer, "Jina search").data.slice(0, n).map((d) => ({ ...d, content: d.content.slice(0, 500) }));
    },
    async duckduckgo(query: string, n: number, signal: AbortSignal) {
      const url = new URL(endpoints.duckduckgo);
      url.searchParams.set("q", query);
      return (await parseDuckDuckGo(await call(url, "DuckDuckGo", signal, { headers: { accept: "text/html" } }))).slice(0, n);
    },
  };

  /** The provider asked for, with what it needs (a key, SearXNG's base URL), or why DuckDuckGo answers instead. */
  function choose(): { name: "brave" | "tavily" | "searxng" | "jina"; credential: string } | { name: "duckduckgo"; note?: string } {
    const name = opts.provider.trim().toLowerCase() || "brave";
    if (name === "duckduckgo") return { name };
    if (name === "brave" || name === "tavily" || name === "jina") {
      const credential = opts.apiKey || env[`${name.toUpperCase()}_API_KEY`] || "";
      return credential ? { name, credential } : { name: "duckduckgo" };
    }
    if (name === "searxng") {
      const credential = (opts.baseUrl || env.SEARXNG_BASE_URL || "").trim();
      if (!credential) return { name: "duckduckgo" };
      if (!/^https?:\/\/[^/]/i.test(credential)) {
        throw new ToolError(`invalid SearXNG URL ${JSON.stringify(credential)} in tools.web.search.baseUrl; write it as http(s)://host[:port]`);
      }
      return { name, credential };
    }
    if (NANOBOT_ONLY_PROVIDERS.includes(name)) return { name: "duckduckgo", note: `troupe does not support the ${name} search provider; these come from DuckDuckGo` };
    throw new ToolError(`unknown search provider '${name}' in tools.web.search.provider; use one of ${SEARCH_PROVIDERS.join(", ")}`);
  }

  async function fallback(query: string, n: number, signal: AbortSignal, note?: string): Promise<string> {
    let items: SearchItem[];
    try {
      items = await providers.duckduckgo(query, n, signal);
    } catch (err) {
      if (err instanceof ProviderFailed) throw new ToolError(`DuckDuckGo search failed (${err.message})${note ? `; before it, ${note}` : ""}`);
      throw err;
    }
    return `${note ? `(${note}.)\n` : ""}${formatResults(query, items, n)}`;
  }

  return defineTool({
    name: "web_search",
    description:
      "Search the web. Returns titles, URLs, and snippets. " +
      `count defaults to ${clamp(opts.maxResults)} (max 10). Use web_fetch to read a specific page in full.`,
    parameters: lazySchema(() => z.object({
      query: z.string().min(1).describe("Search query"),
      count: z.number().int().min(1).max(10).optional().describe("Results (1-10)"),
    })),
    readOnly: true,
    async execute({ query, count }, ctx) {
      const n = clamp(count ?? opts.maxResults);
      const choice = choose();
      if (choice.name === "duckduckgo") return fallback(query, n, ctx.signal, choice.note);
      try {
        return formatResults(query, await providers[choice.name](query, n, choice.credential, ctx.signal), n);
      } catch (err) {
        if (!(err instanceof ProviderFailed)) throw err;
        // The provider down, over quota or refusing the key: the keyless search still answers.
        return fallback(query, n, ctx.signal, `${err.message}; these come from DuckDuckGo`);
      }
    },
  });
}

/** nanobot's bounds for a search's result count. */
export const clamp = (n: number) => Math.min(Math.max(Math.trunc(n) || 1, 1), 10);
