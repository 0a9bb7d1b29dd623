/** Telegram accepts at most this many characters in one message. */
export const TELEGRAM_MAX_CHARS = 4096;

const escapeHtml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
/** A tool hint as nanobot shows it in Telegram: an expandable (collapsed) quote. */
export const toolHintHtml = (hint: string) => `<blockquote expandable>${escapeHtml(hint)}</blockquote>`;
const escapeAttr = (s: string) => escapeHtml(s).replace(/"/g, "&quot;");

/**
 * Markdown as the model writes it → the HTML subset Telegram renders (b, i, s, code, pre, a).
 * Code is protected first (its content only escaped), then the rest is escaped and converted:
 * links, bold, italic, strikethrough, headings (as bold), bullet and numbered lists (one space after
 * the number), quotes.
 */
export function markdownToTelegramHtml(markdown: string): string {
  const saved: string[] = [];
  // Placeholders use private-use characters, which model text does not contain.
  const keep = (html: string) => `\uE000${saved.push(html) - 1}\uE001`;
  let text = markdown.replace(/```[^\n`]*\n?([\s\S]*?)```/g, (_, code: string) => keep(`<pre><code>${escapeHtml(code.replace(/\n$/, ""))}</code></pre>`));
  text = text.replace(/`([^`\n]+)`/g, (_, code: string) => keep(`<code>${escapeHtml(code)}</code>`));
  text = escapeHtml(text);
  text = text.replace(/\[([^\]\n]+)\]\((https?:\/\/[^\s)]+)\)/g, (_, label: string, url: string) => keep(`<a href="${escapeAttr(url.replace(/&amp;/g, "&"))}">${label}</a>`));
  text = text.replace(/^#{1,6}\s+(.+?)\s*#*\s*$/gm, "<b>$1</b>");
  text = text.replace(/^&gt;\s?(.*)$/gm, "┃ $1");
  text = text.replace(/^(\s*)[-*+]\s+/gm, "$1• ");
  // nanobot keeps a numbered item's number and puts one space after it, however many were typed.
  text = text.replace(/^([ \t]*\d+\.)[ \t]+/gm, "$1 ");
  text = text.replace(/\*\*(.+?)\*\*|__(.+?)__/g, (_, a?: string, b?: string) => `<b>${a ?? b}</b>`);
  text = text.replace(/(^|[^\w*])\*(?!\s)([^*\n]+?)\*(?!\w)/g, "$1<i>$2</i>");
  text = text.replace(/(^|[^\w])_(?!\s)([^_\n]+?)_(?!\w)/g, "$1<i>$2</i>");
  text = text.replace(/~~(.+?)~~/g, "<s>$1</s>");
  return text.replace(/\uE000(\d+)\uE001/g, (_, i: string) => saved[Number(i)]!);
}

/**
 * Splits a long message for Telegram: at a paragraph or line break, else a space, never inside a
 * code block (a block that must be split is closed and reopened across the parts).
 */
export function splitMessage(text: string, max = TELEGRAM_MAX_CHARS): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest.length > max) {
    let cut = Math.max(rest.lastIndexOf("\n\n", max), rest.lastIndexOf("\n", max));
    if (cut < max / 2) cut = rest.lastIndexOf(" ", max);
    if (cut <= 0) cut = max;
    let head = rest.slice(0, cut);
    let tail = rest.slice(cut).replace(/^\s+/, "");
    // An odd number of fences means the cut fell inside a code block.
    if ((head.match(/```/g)?.length ?? 0) % 2 === 1) {
      const fence = /```[^\n`]*/g;
      let open = "```";
      for (const m of head.matchAll(fence)) open = m[0];
      head = `${head}\n\`\`\``;
      tail = `${open}\n${tail}`;
    }
    parts.push(head.trimEnd());
    rest = tail;
  }
  if (rest.trim()) parts.push(rest);
  return parts;
}
