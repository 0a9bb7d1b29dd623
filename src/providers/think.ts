/**
 * Reasoning that a model writes inline (<think>, <thinking>, <thought>) is taken out of the reply
 * the user sees and the session stores, with nanobot's rules (nanobot/utils/helpers.py strip_think):
 *
 * - a whole block `<tag>…</tag>` is removed wherever it is;
 * - a block opened at the very start and never closed removes everything after it (a cut stream);
 * - an opener in the middle of the text that is never closed is prose ("the model emits <think>
 *   at the start…") and is kept;
 * - an orphan closing tag, `<thinking/>` and a Harmony `<|channel|>` marker are removed only at the
 *   start or the end of the text, so prose that mentions them keeps them;
 * - a malformed opener without its `>` (`<think广场…`) is removed; `<thinker>`, `<think-x>`, `<think/>` are not tags;
 * - a partial tag at the very end (`answer <thin`) is removed; the result is trimmed.
 *
 * Beyond nanobot, nothing inside backticks (inline code or a fenced block) is touched.
 *
 * The work is one left-to-right scan that holds back only what it cannot decide yet, so the same
 * code serves a whole reply and a stream of deltas: whatever the chunking, the streamed pieces add
 * up to exactly what stripThink returns for the whole text.
 */

const TAGS = ["thinking", "thought", "think"] as const; // longest first: "<think" is a prefix of "<thinking"
const CHANNEL_MARKERS = ["<|channel|>", "<channel|>", "<|channel>", "<channel>"];
/** Characters that continue a tag name: after "<think" they make it another tag, not a malformed opener. */
const NAME_CHAR = /[A-Za-z0-9_\-:>/]/;
const WS = /\s/;

export interface ThinkFilter {
  /** Takes the next delta; returns the visible text that is now certain. */
  push(delta: string): string;
  /** The stream ended: returns the visible text still held back. */
  flush(): string;
}

type Mode =
  | { kind: "text" }
  | { kind: "code"; fence: number }
  /** Inside `<tag>`; `leading` when it opened the reply (unclosed, it hides the rest). */
  | { kind: "block"; tag: string; leading: boolean; body: string; scanned: number; fence: number };

interface State {
  mode: Mode;
  /** Nothing visible yet: leading whitespace and start-only markers are dropped. */
  atStart: boolean;
  /** Whitespace, orphan closing tags, `<thinking/>` at the current end: shown only if visible text follows. */
  held: string;
  /** Input not yet decided (a possible tag or backtick run cut by the end of the delta). */
  carry: string;
}

export function createThinkFilter(): ThinkFilter {
  const state: State = { mode: { kind: "text" }, atStart: true, held: "", carry: "" };
  return {
    push(delta) {
      const text = state.carry + delta;
      state.carry = "";
      return scan(state, text, false);
    },
    flush() {
      const text = state.carry;
      state.carry = "";
      return scan(state, text, true);
    },
  };
}

/** Removes inline reasoning from a complete reply (see the rules above). */
export function stripThink(text: string): string {
  const filter = createThinkFilter();
  return filter.push(text) + filter.flush();
}

/** Visible text: what was held before it goes out with it, and the reply has started. */
function emit(state: State, visible: string): string {
  const out = state.atStart ? visible : state.held + visible;
  state.held = "";
  state.atStart = false;
  return out;
}

function hold(state: State, text: string): void {
  if (!state.atStart) state.held += text;
}

/** Whether `rest` (what follows a "<") could still grow into `token`. */
const couldBe = (rest: string, token: string) => token.startsWith(rest);

function scan(state: State, text: string, final: boolean): string {
  let out = "";
  let i = 0;
  while (i < text.length) {
    const mode = state.mode;
    if (mode.kind === "block") {
      const closer = `</${mode.tag}>`;
      mode.body += text.slice(i);
      i = text.length;
      const at = findCloser(mode, closer);
      if (at === -1) break;
      // The block is gone; what followed the closer is scanned as text.
      const after = mode.body.slice(at + closer.length);
      state.mode = { kind: "text" };
      text = after;
      i = 0;
      continue;
    }
    const ch = text[i]!;
    if (ch === "`") {
      let n = 1;
      while (text[i + n] === "`") n++;
      if (i + n === text.length && !final) {
        state.carry = text.slice(i);
        return out;
      }
      out += emit(state, text.slice(i, i + n));
      if (mode.kind === "code") {
        if (n === mode.fence) state.mode = { kind: "text" };
      } else {
        state.mode = { kind: "code", fence: n };
      }
      i += n;
      continue;
    }
    if (WS.test(ch)) {
      hold(state, ch);
      i++;
      continue;
    }
    if (ch === "<" && mode.kind === "text") {
      const step = tag(state, text, i, final);
      if (step === "wait") {
        state.carry = text.slice(i);
        return out;
      }
      if (step !== undefined) {
        out += step.out;
        i = step.next;
        continue;
      }
    }
    // A plain run up to the next character of interest.
    let j = i + 1;
    while (j < text.length && text[j] !== "`" && text[j] !== "<" && !WS.test(text[j]!)) j++;
    out += emit(state, text.slice(i, j));
    i = j;
  }
  if (final) out += finish(state);
  return out;
}

/**
 * Where the block's closer is in its body so far, or -1. A block opened mid-text may be prose that
 * quotes the tags, so there a closer inside backticks does not count; reasoning at the start is
 * closed by the first closer. Scanning resumes where the last delta left it.
 */
function findCloser(mode: Extract<Mode, { kind: "block" }>, closer: string): number {
  const body = mode.body;
  if (mode.leading) {
    const at = body.indexOf(closer, mode.scanned);
    mode.scanned = at === -1 ? Math.max(0, body.length - closer.length + 1) : at;
    return at;
  }
  let k = mode.scanned;
  while (k < body.length) {
    if (body[k] === "`") {
      let n = 1;
      while (body[k + n] === "`") n++;
      if (k + n === body.length) break; // the run may go on in the next delta
      if (mode.fence === 0) mode.fence = n;
      else if (n === mode.fence) mode.fence = 0;
      k += n;
      continue;
    }
    if (mode.fence === 0 && body[k] === "<") {
      if (body.startsWith(closer, k)) return k;
      if (closer.startsWith(body.slice(k))) break; // cut by the end of the delta
    }
    k++;
  }
  mode.scanned = k;
  return -1;
}

/**
 * A "<" in text: a tag to act on (returns what it shows and where scanning goes on), "wait" when
 * the delta ends before it is known, or undefined for a plain "<".
 */
function tag(state: State, text: string, i: number, final: boolean): { out: string; next: number } | "wait" | undefined {
  const rest = text.slice(i, i + 16);
  for (const name of TAGS) {
    const opener = `<${name}>`;
    if (rest.startsWith(opener)) {
      state.mode = { kind: "block", tag: name, leading: state.atStart, body: "", scanned: 0, fence: 0 };
      return { out: "", next: i + opener.length };
    }
    const closer = `</${name}>`;
    if (rest.startsWith(closer)) {
      // An orphan closer: dropped at the start, held (and dropped at the end) elsewhere.
      hold(state, closer);
      return { out: "", next: i + closer.length };
    }
  }
  if (rest.startsWith("<thinking/>")) {
    hold(state, "<thinking/>");
    return { out: "", next: i + "<thinking/>".length };
  }
  if (state.atStart) {
    const marker = CHANNEL_MARKERS.find((m) => rest.startsWith(m));
    if (marker) return { out: "", next: i + marker.length };
  }
  for (const name of TAGS) {
    const bare = `<${name}`;
    if (!rest.startsWith(bare)) continue;
    const after = text[i + bare.length];
    if (after === undefined) return final ? { out: "", next: text.length } : "wait";
    if (!NAME_CHAR.test(after)) return { out: "", next: i + bare.length }; // malformed opener: the tag name goes
  }
  // Cut by the end of the delta: a prefix of a tag or of a channel marker waits; at the end it is a partial tag, dropped.
  if (i + rest.length === text.length && rest.length < 16) {
    const candidates = [...TAGS.flatMap((n) => [`<${n}>`, `</${n}>`, `<${n}/>`]), ...CHANNEL_MARKERS];
    if (candidates.some((c) => couldBe(rest, c))) {
      if (!final) return "wait";
      if (rest.length > 1) return { out: "", next: text.length };
    }
  }
  return undefined;
}

/** The end of the text: decide what was held back. */
function finish(state: State): string {
  const mode = state.mode;
  state.mode = { kind: "text" };
  let out = "";
  if (mode.kind === "block" && !mode.leading && mode.body.trim() !== "") {
    // Never closed, not at the start: prose that mentions the tag. It is shown, its rest scanned as text.
    out += emit(state, `<${mode.tag}>`);
    out += scan(state, mode.body, true);
    return out;
  }
  state.held = "";
  return out;
}
