/**
 * Markdown as a terminal shows it: headings bold, emphasis, inline code, fenced code blocks,
 * lists, quotes, rules and links, rendered one line at a time so that a reply can be rendered
 * while it streams. No wrapping: the terminal wraps. What is not Markdown passes through as is.
 */

const SGR = {
  bold: ["\x1b[1m", "\x1b[22m"],
  dim: ["\x1b[2m", "\x1b[22m"],
  italic: ["\x1b[3m", "\x1b[23m"],
  underline: ["\x1b[4m", "\x1b[24m"],
  strike: ["\x1b[9m", "\x1b[29m"],
  code: ["\x1b[36m", "\x1b[39m"],
} as const;
const style = (name: keyof typeof SGR, text: string) => `${SGR[name][0]}${text}${SGR[name][1]}`;

/** Emphasis, code spans and links within one line; code spans are left untouched inside. */
export function renderInline(text: string): string {
  return text
    .split(/(`+[^`]*`+)/)
    .map((part, i) => {
      if (i % 2 === 1) return style("code", part.replace(/^`+|`+$/g, ""));
      return part
        .replace(/\[([^\]]+)\]\((\S+?)\)/g, (_m, label: string, url: string) => `${style("underline", label)} (${url})`)
        .replace(/(\*\*|__)(?=\S)(.+?)(?<=\S)\1/g, (_m, _d, inner: string) => style("bold", inner))
        .replace(/~~(?=\S)(.+?)(?<=\S)~~/g, (_m, inner: string) => style("strike", inner))
        .replace(/(^|[^\w*])\*(?=[^\s*])([^*]+?)(?<=\S)\*(?!\w)/g, (_m, pre: string, inner: string) => `${pre}${style("italic", inner)}`)
        .replace(/(^|[^\w])_(?=\S)([^_]+?)(?<=\S)_(?!\w)/g, (_m, pre: string, inner: string) => `${pre}${style("italic", inner)}`);
    })
    .join("");
}

/** Renders lines one by one, remembering whether it is inside a fenced code block. */
export function createMarkdownLines(width = 80): (line: string) => string {
  let fence: string | undefined;
  const rule = "─".repeat(Math.max(10, Math.min(width, 60)));
  return (line) => {
    const fenceMatch = /^\s*(```+|~~~+)\s*(\S*)/.exec(line);
    if (fence) {
      if (fenceMatch && fenceMatch[1]!.startsWith(fence)) {
        fence = undefined;
        return style("dim", "  └──");
      }
      return `  ${style("code", line)}`;
    }
    if (fenceMatch) {
      fence = fenceMatch[1]!;
      return style("dim", `  ┌── ${fenceMatch[2] ?? ""}`.trimEnd());
    }
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) return heading[1]!.length === 1 ? style("bold", style("underline", renderInline(heading[2]!))) : style("bold", renderInline(heading[2]!));
    if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) return style("dim", rule);
    const quote = /^\s*>\s?(.*)$/.exec(line);
    if (quote) return `${style("dim", "│")} ${style("italic", renderInline(quote[1]!))}`;
    const bullet = /^(\s*)[-*+]\s+(\[[ xX]\]\s+)?(.*)$/.exec(line);
    if (bullet) {
      const box = bullet[2] ? (/x/i.test(bullet[2]) ? "☑ " : "☐ ") : "";
      return `${bullet[1]}• ${box}${renderInline(bullet[3]!)}`;
    }
    // A table's alignment row becomes a rule under its header.
    if (/^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)+\|?\s*$/.test(line)) return style("dim", line.replace(/[-:]/g, "─"));
    return renderInline(line);
  };
}

/** Renders a whole text. */
export function renderMarkdown(text: string, width = 80): string {
  const line = createMarkdownLines(width);
  return text.split("\n").map(line).join("\n");
}
