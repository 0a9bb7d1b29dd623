import { createRedactor, REDACTED } from "../log/redact.js";

/** Keys whose values are never shown, whatever they hold. */
const SECRET_KEY = /api[_-]?key|token|secret|password|authorization|cookie/i;

export interface RedactOptions {
  /** Known secret values (configured api keys and tokens). */
  secrets?: Iterable<string>;
  /** Longer strings are cut to this many characters. */
  maxString?: number;
  /** Longer arrays keep their last items only. */
  maxItems?: number;
  maxDepth?: number;
}

/**
 * A copy of an actor's snapshot context fit to show: secrets out (by key name, by known value, by
 * shape), long strings cut, long arrays shortened to their last items, deep nesting summarised.
 */
export function createSnapshotRedactor(opts: RedactOptions = {}): (value: unknown) => unknown {
  const redact = createRedactor(opts.secrets ?? []);
  const maxString = opts.maxString ?? 400;
  const maxItems = opts.maxItems ?? 20;
  const maxDepth = opts.maxDepth ?? 6;
  const walk = (value: unknown, depth: number): unknown => {
    if (typeof value === "string") {
      // Cut before redacting (a long tool result is not scanned whole), with a margin so a secret at the cut is still caught.
      const text = redact(value.length > maxString + 200 ? value.slice(0, maxString + 200) : value);
      return text.length > maxString ? `${text.slice(0, maxString)}… (${value.length} chars)` : text;
    }
    if (value === null || typeof value !== "object") return typeof value === "function" ? "(function)" : value;
    if (depth >= maxDepth) return Array.isArray(value) ? `(${value.length} items)` : "(…)";
    if (Array.isArray(value)) {
      const kept = value.slice(-maxItems).map((v) => walk(v, depth + 1));
      return value.length > maxItems ? [`(${value.length - maxItems} earlier items left out)`, ...kept] : kept;
    }
    // Actor refs and other class instances are named, not walked.
    const proto = Object.getPrototypeOf(value) as object | null;
    if (proto !== Object.prototype && proto !== null) return `(${(value as { id?: string }).id ?? proto.constructor?.name ?? "object"})`;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = SECRET_KEY.test(k) && v ? REDACTED : walk(v, depth + 1);
    return out;
  };
  return (value) => walk(value, 0);
}
