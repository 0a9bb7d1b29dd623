import { createMarkdownLines, renderMarkdown } from "./markdown.js";
import { printable } from "./printable.js";

/** Where a reply is printed, and how. */
export interface PrinterOptions {
  /** Streamed text is shown as it arrives (a terminal); otherwise only the whole reply. */
  stream: boolean;
  /** Render Markdown (a terminal, unless --no-markdown). */
  markdown: boolean;
}

type Out = Pick<NodeJS.WriteStream, "write"> & { columns?: number };

/** Columns a string takes on a terminal: wide (CJK, emoji) characters take two. */
export function displayWidth(text: string): number {
  let width = 0;
  for (const ch of text) {
    if (ch === "\t") width += 8 - (width % 8);
    else if (/[\u1100-\u115F\u2E80-\uA4CF\uAC00-\uD7A3\uF900-\uFAFF\uFE30-\uFE4F\uFF00-\uFF60\uFFE0-\uFFE6\u{1F300}-\u{1FAFF}\u{20000}-\u{3FFFD}]/u.test(ch)) width += 2;
    else if (ch >= " ") width += 1;
  }
  return width;
}

/**
 * A reply's text on the terminal: streamed pieces as they come, each model call's text in its own
 * paragraph, messages (the message tool, notices) on lines of their own, and the final reply printed
 * whole only when it was not the text just streamed (a failure after partial text, a command).
 * With Markdown on, a line is shown raw while it streams and rendered once it is complete.
 */
export function createPrinter(out: Out, opts: PrinterOptions) {
  const render = opts.markdown ? createMarkdownLines(out.columns ?? 80) : (line: string) => line;
  let atLineStart = true;
  let anyText = false;
  /** The text streamed since the last boundary: the current model call's. */
  let segment = "";
  let newParagraph = false;
  /** The current line as streamed so far (shown raw while Markdown is on). */
  let partial = "";

  /** A status line (the spinner) is on screen, on a line of its own that nothing else has written to. */
  let statusShown = false;
  const clearStatus = () => {
    if (!statusShown) return;
    out.write("\r\x1b[K");
    statusShown = false;
  };
  const write = (text: string) => {
    if (!text) return;
    clearStatus();
    out.write(text);
    atLineStart = text.endsWith("\n");
  };
  const freshLine = () => {
    if (!atLineStart) write("\n");
  };
  /** Takes the raw partial line off the screen (it may have wrapped over several rows). */
  const erasePartial = () => {
    clearStatus();
    if (!partial || !out.columns) return;
    const rows = Math.max(1, Math.ceil(displayWidth(partial) / out.columns));
    out.write(`${rows > 1 ? `\x1b[${rows - 1}A` : ""}\r\x1b[J`);
    atLineStart = true;
  };

  // The model's text may repeat what a web page or a message told it to: escape sequences in it are
  // shown escaped (printable.ts), the printer's own (Markdown styles, erasing a line) are added after.
  function delta(raw: string): void {
    if (!opts.stream || !raw) return;
    const text = printable(raw);
    if (newParagraph) {
      flushPartial();
      freshLine();
      if (anyText) write("\n");
      segment = "";
      newParagraph = false;
    }
    segment += text;
    anyText = true;
    if (!opts.markdown) return write(text);
    const lines = (partial + text).split("\n");
    const rest = lines.pop() ?? "";
    if (lines.length) {
      erasePartial();
      write(lines.map((l) => `${render(l)}\n`).join(""));
      partial = "";
    }
    // Without a known width the raw text could not be taken back: complete lines only.
    if (out.columns && rest.length > partial.length) write(rest.slice(partial.length));
    partial = rest;
  }

  function flushPartial(): void {
    if (!partial) return;
    erasePartial();
    write(render(partial));
    partial = "";
  }

  return {
    delta,
    /**
     * Shows (or with undefined, takes away) a one-line status, such as the spinner with the turn's
     * state, on a terminal only, and only at the start of a line: never over streamed text.
     */
    status(shown: string | undefined): void {
      if (!opts.stream) return;
      if (shown === undefined) return clearStatus();
      // A tool hint is built from the model's arguments: escaped as the text is.
      const text = printable(shown);
      if (!atLineStart || partial) return;
      const width = out.columns ?? 80;
      out.write(`\r\x1b[K${text.length >= width ? `${text.slice(0, width - 2)}…` : text}`);
      statusShown = true;
    },
    /** A model call ended: the next streamed text starts a new paragraph. */
    boundary: () => void (segment && (newParagraph = true)),
    /** A whole message (a message-tool send, a notice), on lines of its own. */
    message(raw: string): void {
      const text = printable(raw);
      flushPartial();
      freshLine();
      write(`${opts.markdown ? renderMarkdown(text, out.columns) : text}\n`);
    },
    /**
     * Ends the reply. What was streamed as the last model call's text is the reply: only its line is
     * ended; anything else (a failure, a command's answer, an unstreamed reply) is printed whole, to
     * `to` (stderr for a failed turn of `agent -m`).
     */
    finish(raw: string, to: Out = out): void {
      const reply = printable(raw);
      flushPartial();
      if (segment && segment.trim() === reply.trim()) return freshLine();
      freshLine();
      const text = opts.markdown && to === out ? renderMarkdown(reply, out.columns) : reply;
      if (to === out) write(`${text}\n`);
      else to.write(`${text}\n`);
    },
    /** Starts over for the next reply. */
    reset(): void {
      flushPartial();
      freshLine();
      segment = "";
      newParagraph = false;
      anyText = false;
    },
  };
}
export type Printer = ReturnType<typeof createPrinter>;
