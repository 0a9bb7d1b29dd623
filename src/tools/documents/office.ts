import { strFromU8, unzipSync } from "fflate";
import type * as htmlparser2 from "htmlparser2";
import { DOMParser } from "linkedom";

/** DOCX, XLSX and PPTX are zip archives of XML; these bounds keep a hostile one from filling the heap. */
const MAX_MEMBERS = 10_000;
const MAX_MEMBER_BYTES = 128 * 1024 * 1024;
const MAX_TOTAL_BYTES = 256 * 1024 * 1024;
/** A part read as a whole tree (DOCX's body, a slide) takes many times its size in memory: larger ones are refused. */
const MAX_TREE_XML_BYTES = 32 * 1024 * 1024;

/** Refuses a part that would be parsed into a tree and is over MAX_TREE_XML_BYTES. */
function treeSized(name: string, size: number): void {
  if (size > MAX_TREE_XML_BYTES) throw new DocumentError(`${name} inside it is ${size} bytes of XML (the limit is ${MAX_TREE_XML_BYTES / 1024 / 1024} MB)`);
}

export type OfficeKind = "docx" | "xlsx" | "pptx";

/** A document that cannot be read, with why (shown to the model as a tool error). */
export class DocumentError extends Error {}

/** The members of an Office archive that `want` accepts, after checking the whole archive against the bounds. */
function unzipMembers(data: Uint8Array, kind: OfficeKind, want: (name: string, size: number) => boolean): Record<string, Uint8Array> {
  let members = 0;
  let total = 0;
  try {
    return unzipSync(data, {
      filter(file) {
        members++;
        total += file.originalSize;
        if (members > MAX_MEMBERS) throw new DocumentError(`it holds more than ${MAX_MEMBERS} files`);
        if (file.originalSize > MAX_MEMBER_BYTES) throw new DocumentError(`${file.name} inside it unpacks to ${file.originalSize} bytes`);
        if (total > MAX_TOTAL_BYTES) throw new DocumentError(`it unpacks to more than ${MAX_TOTAL_BYTES / 1024 / 1024} MB`);
        return want(file.name, file.originalSize);
      },
    });
  } catch (err) {
    if (err instanceof DocumentError) throw new DocumentError(`the ${kind.toUpperCase()} file is too large to read safely: ${err.message}`);
    throw new DocumentError(
      `not a valid ${kind.toUpperCase()} file (${(err as Error).message}); a password-protected document or an old binary .doc/.xls/.ppt saved under this name cannot be read`,
    );
  }
}

interface XmlNode {
  nodeName: string;
  nodeType: number;
  textContent: string | null;
  childNodes: ArrayLike<XmlNode>;
  getAttribute(name: string): string | null;
  getElementsByTagName(name: string): ArrayLike<XmlNode>;
}

function parseXml(bytes: Uint8Array | undefined): XmlNode | undefined {
  if (!bytes) return undefined;
  return new DOMParser().parseFromString(strFromU8(bytes), "text/xml") as unknown as XmlNode;
}

const elements = (node: XmlNode | undefined, name: string): XmlNode[] => (node ? Array.from(node.getElementsByTagName(name)) : []);
const children = (node: XmlNode): XmlNode[] => Array.from(node.childNodes).filter((c) => c.nodeType === 1);

/** Relationship id → archive path, from a part's .rels file (targets are relative to the part's folder). */
function relationships(files: Record<string, Uint8Array>, relsPath: string, baseDir: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const rel of elements(parseXml(files[relsPath]), "Relationship")) {
    const id = rel.getAttribute("Id");
    const target = rel.getAttribute("Target");
    if (!id || !target) continue;
    map.set(id, target.startsWith("/") ? target.slice(1) : normalise(`${baseDir}/${target}`));
  }
  return map;
}

function normalise(path: string): string {
  const out: string[] = [];
  for (const part of path.split("/")) {
    if (part === "..") out.pop();
    else if (part && part !== ".") out.push(part);
  }
  return out.join("/");
}

interface HtmlNode {
  tagName?: string;
  nodeType: number;
  textContent: string | null;
  children: ArrayLike<HtmlNode>;
}

const squeeze = (s: string | null) => (s ?? "").replace(/\s+/g, " ").trim();

/** Blocks of a DOCX's HTML in reading order: a paragraph, heading or list item each; a table as tab-separated rows. */
function docxBlocks(node: HtmlNode, out: string[]): void {
  for (const child of Array.from(node.children)) {
    const tag = child.tagName?.toUpperCase();
    if (tag === "TABLE") {
      const rows = Array.from((child as unknown as { querySelectorAll(s: string): ArrayLike<HtmlNode> }).querySelectorAll("tr"))
        .map((tr) => Array.from(tr.children).map((cell) => squeeze(cell.textContent)))
        .filter((cells) => cells.some(Boolean))
        .map((cells) => cells.join("\t"));
      if (rows.length) out.push(rows.join("\n"));
    } else if (tag === "UL" || tag === "OL") {
      docxBlocks(child, out);
    } else {
      const text = squeeze(child.textContent);
      if (text) out.push(text);
    }
  }
}

async function docxText(data: Uint8Array): Promise<string> {
  unzipMembers(data, "docx", (name, size) => {
    if (name === "word/document.xml") treeSized(name, size);
    return false;
  });
  const mammoth = (await import("mammoth")).default;
  const { value } = await mammoth.convertToHtml({ buffer: Buffer.from(data) }, { ignoreEmptyParagraphs: true, convertImage: mammoth.images.imgElement(() => Promise.resolve({ src: "" })) });
  const { parseHTML } = await import("linkedom");
  const { document } = parseHTML(`<!doctype html><html><body>${value}</body></html>`);
  const blocks: string[] = [];
  docxBlocks(document.body as unknown as HtmlNode, blocks);
  return blocks.join("\n\n");
}

/** "B12" → 1 (the 0-based column). */
function columnOf(ref: string | undefined): number | undefined {
  const letters = /^([A-Z]+)\d*$/i.exec(ref ?? "")?.[1]?.toUpperCase();
  if (!letters) return undefined;
  let n = 0;
  for (const ch of letters) n = n * 26 + (ch.charCodeAt(0) - 64);
  return n - 1;
}

type Sax = typeof htmlparser2;

/**
 * Shared strings and sheets are read with a streaming parser, not a DOM: a large sheet's XML would
 * take gigabytes as a tree, and reading stops once the output cap is reached.
 */
function sharedStrings(sax: Sax, bytes: Uint8Array | undefined): string[] {
  const out: string[] = [];
  if (!bytes) return out;
  let current: string | undefined;
  let inText = false;
  let phonetic = 0;
  const parser = new sax.Parser(
    {
      onopentag(name) {
        if (name === "si") current = "";
        else if (name === "rPh") phonetic++;
        else if (name === "t" && phonetic === 0) inText = true;
      },
      ontext(text) {
        if (inText && current !== undefined) current += text;
      },
      onclosetag(name) {
        if (name === "t") inText = false;
        else if (name === "rPh") phonetic--;
        else if (name === "si") {
          out.push(current ?? "");
          current = undefined;
        }
      },
    },
    { xmlMode: true, decodeEntities: true },
  );
  parser.end(strFromU8(bytes));
  return out;
}

/** A sheet's non-empty rows as tab-separated lines, until `budget` characters are used. */
function sheetRows(sax: Sax, bytes: Uint8Array, shared: string[], budget: number): { rows: string[]; cut: boolean } {
  const rows: string[] = [];
  let used = 0;
  let cut = false;
  let cells: string[] = [];
  let cell: { col: number | undefined; type: string | undefined; text: string } | undefined;
  let collect = false;
  const parser = new sax.Parser(
    {
      onopentag(name, attrs) {
        if (cut) return;
        if (name === "row") cells = [];
        else if (name === "c") cell = { col: columnOf(attrs.r), type: attrs.t, text: "" };
        else if (cell && (name === "v" || (name === "t" && cell.type === "inlineStr"))) collect = true;
      },
      ontext(text) {
        if (collect && cell) cell.text += text;
      },
      onclosetag(name) {
        if (cut) return;
        if (name === "v" || name === "t") collect = false;
        else if (name === "c" && cell) {
          const col = cell.col ?? cells.length;
          while (cells.length < col) cells.push("");
          const v = cell.text;
          cells[col] = cell.type === "s" ? (shared[Number(v)] ?? "") : cell.type === "b" ? (v === "1" ? "TRUE" : v === "0" ? "FALSE" : v) : v;
          cell = undefined;
        } else if (name === "row") {
          const line = cells.join("\t").replace(/\s+$/, "");
          if (!line.trim()) return;
          if (used + line.length + 1 > budget) {
            cut = true;
            parser.pause();
            return;
          }
          rows.push(line);
          used += line.length + 1;
        }
      },
    },
    { xmlMode: true, decodeEntities: true },
  );
  parser.end(strFromU8(bytes));
  return { rows, cut };
}

async function xlsxText(data: Uint8Array, maxChars: number): Promise<string> {
  const files = unzipMembers(data, "xlsx", (name) => name.startsWith("xl/") && (name.endsWith(".xml") || name.endsWith(".rels")));
  const sax = await import("htmlparser2");
  const shared = sharedStrings(sax, files["xl/sharedStrings.xml"]);
  const rels = relationships(files, "xl/_rels/workbook.xml.rels", "xl");
  const sections: string[] = [];
  let used = 0;
  for (const sheet of elements(parseXml(files["xl/workbook.xml"]), "sheet")) {
    const path = rels.get(sheet.getAttribute("r:id") ?? "");
    const bytes = path ? files[path] : undefined;
    if (!bytes) continue;
    const header = `--- Sheet: ${sheet.getAttribute("name") ?? "?"} ---`;
    // Room is kept for the note that says the rows were cut.
    const { rows, cut } = sheetRows(sax, bytes, shared, maxChars - used - header.length - 200);
    if (rows.length) sections.push(`${header}\n${rows.join("\n")}`);
    used += header.length + rows.reduce((n, r) => n + r.length + 1, 0) + 2;
    if (cut) {
      sections.push(`(Rows cut at ~${Math.round(maxChars / 1000)}K characters; the rest of this sheet and any later sheets are not shown)`);
      break;
    }
  }
  return sections.join("\n\n");
}

/** A slide's lines in reading order: a paragraph per line, a table row as tab-separated cells. */
function slideLines(node: XmlNode, out: string[]): void {
  for (const child of children(node)) {
    if (child.nodeName === "a:tbl") {
      for (const tr of elements(child, "a:tr")) {
        const cells = elements(tr, "a:tc").map((tc) => elements(tc, "a:p").map(paragraphText).filter(Boolean).join(" "));
        const line = cells.filter(Boolean).join("\t");
        if (line) out.push(line);
      }
    } else if (child.nodeName === "a:p") {
      const text = paragraphText(child);
      if (text) out.push(text);
    } else {
      slideLines(child, out);
    }
  }
}

const paragraphText = (p: XmlNode): string =>
  elements(p, "a:t")
    .map((t) => t.textContent ?? "")
    .join("")
    .trim();

function pptxText(data: Uint8Array): string {
  const files = unzipMembers(data, "pptx", (name, size) => {
    const wanted = name.startsWith("ppt/") && (name.endsWith(".xml") || name.endsWith(".rels")) && !name.startsWith("ppt/media/");
    if (wanted) treeSized(name, size);
    return wanted;
  });
  const rels = relationships(files, "ppt/_rels/presentation.xml.rels", "ppt");
  const order = elements(parseXml(files["ppt/presentation.xml"]), "p:sldId").flatMap((s) => rels.get(s.getAttribute("r:id") ?? "") ?? []);
  const sections: string[] = [];
  order.forEach((path, i) => {
    const xml = parseXml(files[path]);
    if (!xml) return;
    const lines: string[] = [];
    slideLines(xml, lines);
    if (lines.length) sections.push(`--- Slide ${i + 1} ---\n${lines.join("\n")}`);
  });
  return sections.join("\n\n");
}

/** The text of a DOCX (paragraphs), XLSX (a tab-separated block per sheet) or PPTX (a block per slide). */
export async function extractOfficeText(data: Uint8Array, kind: OfficeKind, maxChars: number): Promise<string> {
  if (kind === "docx") return docxText(data);
  return kind === "xlsx" ? xlsxText(data, maxChars) : pptxText(data);
}
