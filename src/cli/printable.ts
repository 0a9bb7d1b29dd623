/**
 * Text from outside (a chat message, a model's reply, a web page it read, a cron job the model added)
 * printed on the owner's terminal: every control character but newline and tab (C0, DEL, C1) is shown
 * as \xNN, so no escape sequence in it can clear the screen, retitle the window or rewrite what was
 * printed. A CRLF line ending stays a line ending.
 */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

const HAS_CONTROL = new RegExp(CONTROL.source);

export function printable(text: string): string {
  if (!HAS_CONTROL.test(text)) return text;
  return text.replace(/\r\n/g, "\n").replace(CONTROL, (ch) => `\\x${ch.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

/** Every string in a parsed value (a log entry) made printable. */
export function printableDeep(value: unknown): unknown {
  if (typeof value === "string") return printable(value);
  if (Array.isArray(value)) return value.map(printableDeep);
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [printable(k), printableDeep(v)]));
  return value;
}
