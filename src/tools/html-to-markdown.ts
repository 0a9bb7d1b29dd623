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

/** The readable part of an HTML page as markdown; falls back to the whole body when no article is found. */
export async function htmlToMarkdown(html: string): Promise<ReadablePage> {
  const { parseHTML, Readability, turndown } = await htmlLibs();
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
  if (article?.content) {
    return { title: article.title?.trim() || title, markdown: turndown.turndown(article.content).trim(), extractor: "readability" };
  }
  const body = document.body?.innerHTML ?? html;
  return { title, markdown: turndown.turndown(body).trim(), extractor: "full" };
}
