import { formatPageRange, parsePageRange } from "./pages.js";

/** Pages read in one call; the trailer says how to ask for the next ones. */
export const MAX_PDF_PAGES = 20;

export interface PdfText {
  /** "--- Page N ---" blocks of the pages read that have text. */
  text: string;
  totalPages: number;
  /** Pages read, 1-based. */
  read: number[];
  /** Pages asked for (or the rest of the document) that were not read: over the page or character cap. */
  remaining: number[];
}

interface TextItem {
  str?: string;
  hasEOL?: boolean;
}

/** The text of a PDF's pages (all of them, or those `pages` names), up to MAX_PDF_PAGES and `maxChars`. */
export async function extractPdfText(data: Uint8Array, pages: string | undefined, maxChars: number): Promise<PdfText> {
  // unpdf bundles pdf.js (1.6 MB): loaded by the first PDF read, never at start.
  const { getDocumentProxy } = await import("unpdf");
  const pdf = await getDocumentProxy(data);
  try {
    const totalPages = pdf.numPages;
    const wanted = pages?.trim() ? parsePageRange(pages, totalPages) : Array.from({ length: totalPages }, (_, i) => i + 1);
    const read: number[] = [];
    const blocks: string[] = [];
    let length = 0;
    for (const n of wanted.slice(0, MAX_PDF_PAGES)) {
      const page = await pdf.getPage(n);
      const content = await page.getTextContent();
      const text = (content.items as TextItem[])
        .map((item) => `${item.str ?? ""}${item.hasEOL ? "\n" : ""}`)
        .join("")
        .trim();
      page.cleanup();
      if (text) {
        const block = `--- Page ${n} ---\n${text}`;
        if (length + block.length > maxChars && read.length > 0) break;
        blocks.push(block.length > maxChars ? `${block.slice(0, maxChars)}… (page cut at ${maxChars} characters)` : block);
        length += block.length + 2;
      }
      read.push(n);
    }
    return { text: blocks.join("\n\n"), totalPages, read, remaining: wanted.slice(read.length) };
  } finally {
    await pdf.loadingTask.destroy();
  }
}

/** The note after a PDF's text when pages are left: which ones were shown and the `pages` to ask next. */
export function pdfTrailer(r: PdfText): string {
  if (r.remaining.length === 0) return "";
  const next = formatPageRange(r.remaining.slice(0, MAX_PDF_PAGES));
  return `\n\n(Showing pages ${formatPageRange(r.read)} of ${r.totalPages}. Use pages='${next}' to continue.)`;
}
