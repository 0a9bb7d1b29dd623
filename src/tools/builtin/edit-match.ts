/**
 * Where edit_file's old_text is in a file, with nanobot's fallbacks when it is not there exactly:
 * the same lines with other indentation or trailing spaces, then the same text with curly quotes
 * where the model wrote straight ones (or the reverse). And how a replacement found by a fallback
 * is made to fit: the file's quote style and indentation are kept.
 */

export interface Match {
  start: number;
  end: number;
  /** The file's text at the match. */
  text: string;
  /** 1-based line of the start. */
  line: number;
  how: "exact" | "trimmed" | "quotes";
}

const QUOTES: Record<string, string> = { "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"' };
/** Curly quotes made straight; one character for one, so offsets stay the same. */
export const normalizeQuotes = (s: string) => s.replace(/[\u2018\u2019\u201c\u201d]/g, (c) => QUOTES[c]!);

const lineAt = (text: string, index: number) => {
  let line = 1;
  for (let i = text.indexOf("\n"); i !== -1 && i < index; i = text.indexOf("\n", i + 1)) line++;
  return line;
};

function exact(content: string, needle: string, how: Match["how"], original = content): Match[] {
  const found: Match[] = [];
  for (let at = content.indexOf(needle); at !== -1; at = content.indexOf(needle, at + Math.max(1, needle.length))) {
    found.push({ start: at, end: at + needle.length, text: original.slice(at, at + needle.length), line: lineAt(content, at), how });
  }
  return found;
}

/** Lines as Python's splitlines sees them: a final newline does not start another line. */
function lines(text: string): string[] {
  const out = text.split("\n");
  if (out.length > 1 && out.at(-1) === "") out.pop();
  return out;
}

/** Windows of whole lines equal to old_text's lines once each line is trimmed (and, optionally, its quotes made straight). */
function trimmed(content: string, needle: string, quotes: boolean): Match[] {
  const want = lines(needle).map((l) => (quotes ? normalizeQuotes(l.trim()) : l.trim()));
  // Blank lines alone would match every blank line of the file.
  if (want.every((l) => l === "")) return [];
  const have = lines(content);
  const offsets: number[] = [];
  let pos = 0;
  for (const l of have) {
    offsets.push(pos);
    pos += l.length + 1;
  }
  const found: Match[] = [];
  for (let i = 0; i + want.length <= have.length; i++) {
    let same = true;
    for (let j = 0; j < want.length && same; j++) {
      const l = have[i + j]!.trim();
      same = (quotes ? normalizeQuotes(l) : l) === want[j];
    }
    if (!same) continue;
    const start = offsets[i]!;
    const last = i + want.length - 1;
    let end = Math.min(content.length, offsets[last]! + have[last]!.length);
    // old_text that ends with a newline takes the line's newline too, as an exact match would.
    if (needle.endsWith("\n") && content[end] === "\n") end++;
    found.push({ start, end, text: content.slice(start, end), line: i + 1, how: quotes ? "quotes" : "trimmed" });
    // Matches never overlap (as exact ones do not): replacing overlapping ranges would lose lines.
    i += want.length - 1;
  }
  return found;
}

/** Every match of old_text by the first strategy that finds any: exact, trimmed lines, trimmed lines with straight quotes, straight quotes. */
export function findMatches(content: string, needle: string): Match[] {
  const strategies = [
    () => exact(content, needle, "exact"),
    () => trimmed(content, needle, false),
    () => trimmed(content, needle, true),
    () => exact(normalizeQuotes(content), normalizeQuotes(needle), "quotes", content),
  ];
  for (const strategy of strategies) {
    const found = strategy();
    if (found.length) return found;
  }
  return [];
}

/** The last line a match covers (a match ending in a newline does not cover the next line). */
export function coversLine(match: Match, line: number): boolean {
  const body = match.text.endsWith("\n") ? match.text.slice(0, -1) : match.text;
  const last = match.line + (body.match(/\n/g)?.length ?? 0);
  return match.line <= line && line <= last;
}

function curlyDouble(text: string): string {
  let opening = true;
  return text.replace(/"/g, () => {
    const q = opening ? "\u201c" : "\u201d";
    opening = !opening;
    return q;
  });
}

function curlySingle(text: string): string {
  let opening = true;
  const word = /[\p{L}\p{N}]/u;
  return text.replace(/'/g, (_, i: number) => {
    // An apostrophe inside a word (it's) is a right single quote and does not open a quotation.
    if (word.test(text[i - 1] ?? "") && word.test(text[i + 1] ?? "")) return "\u2019";
    const q = opening ? "\u2018" : "\u2019";
    opening = !opening;
    return q;
  });
}

/** When old_text matched only with its quotes made straight, new_text takes the file's curly quotes. */
export function keepQuoteStyle(oldText: string, actual: string, newText: string): string {
  if (oldText === actual || normalizeQuotes(oldText.trim()) !== normalizeQuotes(actual.trim())) return newText;
  let styled = newText;
  if (/[\u201c\u201d]/.test(actual)) styled = curlyDouble(styled);
  if (/[\u2018\u2019]/.test(actual)) styled = curlySingle(styled);
  return styled;
}

const leadingWs = (line: string) => /^[ \t]*/.exec(line)![0];

/** When old_text matched with other indentation, new_text is indented as the file's match is. */
export function keepIndentation(oldText: string, actual: string, newText: string): string {
  const oldLines = oldText.split("\n");
  const actualLines = actual.split("\n");
  if (oldLines.length !== actualLines.length) return newText;
  const pairs = oldLines.map((o, i) => [o, actualLines[i]!] as const).filter(([o, a]) => o.trim() && a.trim());
  if (pairs.length === 0 || pairs.some(([o, a]) => normalizeQuotes(o.trim()) !== normalizeQuotes(a.trim()))) return newText;
  const oldWs = leadingWs(pairs[0]![0]);
  const actualWs = leadingWs(pairs[0]![1]);
  if (oldWs === actualWs || !actualWs.startsWith(oldWs)) return newText;
  const extra = actualWs.slice(oldWs.length);
  return newText
    .split("\n")
    .map((l) => (l ? extra + l : l))
    .join("\n");
}

/** Why old_text was close to a region but did not match it, in words the model can act on. */
export function nearMissReasons(oldText: string, actual: string): string[] {
  if (oldText === actual) return [];
  const collapse = (t: string) => t.split("\n").map((l) => l.trim().split(/\s+/).join(" ")).join("\n");
  const reasons: string[] = [];
  if (oldText.toLowerCase() === actual.toLowerCase()) reasons.push("letter case differs");
  if (collapse(oldText) === collapse(actual)) reasons.push("whitespace differs");
  if (oldText.replace(/\n+$/, "") === actual.replace(/\n+$/, "")) reasons.push("trailing newline differs");
  if (normalizeQuotes(oldText) === normalizeQuotes(actual)) reasons.push("quote style differs");
  return reasons;
}
