import { strToU8, zipSync } from "fflate";

/** Small documents built in the test, so no binary fixture is committed. */

/** A PDF with one line of Helvetica text per page, with a correct cross-reference table. */
export function makePdf(pages: string[]): Uint8Array {
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    `<< /Type /Pages /Kids [${pages.map((_, i) => `${4 + i * 2} 0 R`).join(" ")}] /Count ${pages.length} >>`,
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
  ];
  pages.forEach((text, i) => {
    const stream = text ? `BT /F1 12 Tf 72 720 Td (${text.replace(/[()\\]/g, (c) => `\\${c}`)}) Tj ET` : "";
    objects.push(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${5 + i * 2} 0 R >>`);
    objects.push(`<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`);
  });
  let out = "%PDF-1.4\n";
  const offsets = objects.map((body, i) => {
    const at = out.length;
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
    return at;
  });
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("")}`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return strToU8(out);
}

const XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>';
const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const rels = (targets: Array<[id: string, target: string]>) =>
  `${XML}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${targets
    .map(([id, target]) => `<Relationship Id="${id}" Type="x" Target="${target}"/>`)
    .join("")}</Relationships>`;

/** Paragraphs, and tables given as { table: rows of cells }. */
export function makeDocx(blocks: Array<string | { table: string[][] }>): Uint8Array {
  const para = (p: string) => `<w:p><w:r><w:t xml:space="preserve">${esc(p)}</w:t></w:r></w:p>`;
  const body = blocks
    .map((b) =>
      typeof b === "string" ? para(b) : `<w:tbl>${b.table.map((row) => `<w:tr>${row.map((cell) => `<w:tc>${para(cell)}</w:tc>`).join("")}</w:tr>`).join("")}</w:tbl>`,
    )
    .join("");
  return zipSync({
    "[Content_Types].xml": strToU8(
      `${XML}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`,
    ),
    "_rels/.rels": strToU8(
      `${XML}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`,
    ),
    "word/document.xml": strToU8(`${XML}<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${body}</w:body></w:document>`),
  });
}

/** Cells are strings (shared strings), numbers, or null for an empty cell; each sheet is [name, rows]. */
export function makeXlsx(sheets: Array<[string, Array<Array<string | number | boolean | null>>]>): Uint8Array {
  const shared: string[] = [];
  const col = (i: number) => String.fromCharCode(65 + i);
  const files: Record<string, Uint8Array> = {};
  sheets.forEach(([, rows], s) => {
    const xmlRows = rows
      .map((row, r) => {
        const cells = row
          .map((v, c) => {
            const ref = `${col(c)}${r + 1}`;
            if (v === null) return "";
            if (typeof v === "number") return `<c r="${ref}"><v>${v}</v></c>`;
            if (typeof v === "boolean") return `<c r="${ref}" t="b"><v>${v ? 1 : 0}</v></c>`;
            shared.push(v);
            return `<c r="${ref}" t="s"><v>${shared.length - 1}</v></c>`;
          })
          .join("");
        return `<row r="${r + 1}">${cells}</row>`;
      })
      .join("");
    files[`xl/worksheets/sheet${s + 1}.xml`] = strToU8(`${XML}<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>${xmlRows}</sheetData></worksheet>`);
  });
  files["xl/workbook.xml"] = strToU8(
    `${XML}<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets>${sheets
      .map(([name], s) => `<sheet name="${esc(name)}" sheetId="${s + 1}" r:id="rId${s + 1}"/>`)
      .join("")}</sheets></workbook>`,
  );
  files["xl/_rels/workbook.xml.rels"] = strToU8(rels(sheets.map((_, s) => [`rId${s + 1}`, `worksheets/sheet${s + 1}.xml`])));
  files["xl/sharedStrings.xml"] = strToU8(
    `${XML}<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">${shared.map((t) => `<si><t>${esc(t)}</t></si>`).join("")}</sst>`,
  );
  return zipSync(files);
}

/** Each slide is a list of paragraphs, or a table (rows of cells) given as { table }. */
export function makePptx(slides: Array<Array<string | { table: string[][] }>>): Uint8Array {
  const ns = 'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"';
  const para = (t: string) => `<a:p><a:r><a:t>${esc(t)}</a:t></a:r></a:p>`;
  const files: Record<string, Uint8Array> = {};
  slides.forEach((items, i) => {
    const shapes = items
      .map((item) =>
        typeof item === "string"
          ? `<p:sp><p:txBody>${para(item)}</p:txBody></p:sp>`
          : `<p:graphicFrame><a:graphic><a:graphicData><a:tbl>${item.table
              .map((row) => `<a:tr>${row.map((cell) => `<a:tc><a:txBody>${para(cell)}</a:txBody></a:tc>`).join("")}</a:tr>`)
              .join("")}</a:tbl></a:graphicData></a:graphic></p:graphicFrame>`,
      )
      .join("");
    files[`ppt/slides/slide${i + 1}.xml`] = strToU8(`${XML}<p:sld ${ns}><p:cSld><p:spTree>${shapes}</p:spTree></p:cSld></p:sld>`);
  });
  const order = slides.map((_, i) => i);
  files["ppt/presentation.xml"] = strToU8(
    `${XML}<p:presentation ${ns} xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><p:sldIdLst>${order
      .map((i) => `<p:sldId id="${256 + i}" r:id="rId${i + 1}"/>`)
      .join("")}</p:sldIdLst></p:presentation>`,
  );
  files["ppt/_rels/presentation.xml.rels"] = strToU8(rels(slides.map((_, i) => [`rId${i + 1}`, `slides/slide${i + 1}.xml`])));
  return zipSync(files);
}

/** A valid 1×1 PNG. */
export const PNG_1PX = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "base64");
