import type { Readability as ReadabilityClass } from "@mozilla/readability";
import type { parseHTML as ParseHtml } from "linkedom";
import type TurndownService from "turndown";

// The HTML libraries (linkedom alone is ~180 modules) load with the first page fetched, not with the CLI.
let libs: Promise<{ parseHTML: typeof ParseHtml; Readability: typeof ReadabilityClass; turndown: TurndownService }> | undefined;
const htmlLibs = () =>
  (libs ??= (async () => {
    const [{ parseHTML }, { Readability }, { default: Turndown }] = await Promise.all([import("linkedom"), import("@mozilla/readability"), import("turndown")]);
    const turndown = new Turndown({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-" });
    turndown.remove(["script", "style", "noscript", "iframe", "svg", "form"]);
    return { parseHTML, Readability, turndown };
  })());

export interface ReadablePage {
  title: string;
  markdown: string;
  /** "readability" when the article was found, "full" when the whole body was converted. */
  extractor: "readability" | "full";
}

/** The readable part of an HTML page as plain text (web_fetch's extractMode "text"). */
export async function htmlToText(html: string): Promise<ReadablePage> {
  const { parseHTML } = await htmlLibs();
  const page = await readableHtml(html);
  // Block ends become line breaks, so paragraphs do not run together.
  const lined = page.html.replace(/<\/(p|div|section|article|header|footer|h[1-6]|li|tr|blockquote|pre|table|ul|ol)>/gi, "$&\n").replace(/<br\s*\/?>/gi, "\n");
  const { document } = parseHTML(`<html><body>${lined}</body></html>`);
  for (const node of document.querySelectorAll("script, style, noscript, template")) node.remove();
  const text = (document.body?.textContent ?? "").replace(/[ \t]+/g, " ").replace(/\s*\n\s*(\n\s*)+/g, "\n\n").trim();
  return { title: page.title, markdown: text, extractor: page.extractor };
}

/** The readable part of an HTML page as markdown; falls back to the whole body when no article is found. */
export async function htmlToMarkdown(html: string): Promise<ReadablePage> {
  const { turndown } = await htmlLibs();
  const page = await readableHtml(html);
  return { title: page.title, markdown: turndown.turndown(page.html).trim(), extractor: page.extractor };
}

async function readableHtml(html: string): Promise<{ title: string; html: string; extractor: ReadablePage["extractor"] }> {
  const { parseHTML, Readability } = await htmlLibs();
  const { document } = parseHTML(html);
  const title = document.title?.trim() ?? "";
  let article: { title?: string | null; content?: string | null } | null = null;
  try {
    // Readability mutates the document it reads, so it gets its own copy.
    const copy = parseHTML(html).document;
    article = new Readability(copy as unknown as ConstructorParameters<typeof Readability>[0], { charThreshold: 200 }).parse();
  } catch {
    article = null;
  }
  if (article?.content) return { title: article.title?.trim() || title, html: article.content, extractor: "readability" };
  return { title, html: document.body?.innerHTML ?? html, extractor: "full" };
}
