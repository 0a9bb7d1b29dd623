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
  /**
   * Inside `<tag>`; `leading` when it opened the reply (unclosed, it hides the rest). The body is
   * kept in parts (scanned) and `pending` (a possible closer or backtick run cut by the delta's end):
   * one growing string would be copied whole at every delta.
   */
  | { kind: "block"; tag: string; leading: boolean; parts: string[]; pending: string; fence: number };

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
  const out = scanText(state, text, final);
  return final ? out + finish(state) : out;
}

/** The scan itself; with `final` nothing is left in carry, but a block may still be open. */
function scanText(state: State, text: string, final: boolean): string {
  let out = "";
  let i = 0;
  while (i < text.length) {
    const mode = state.mode;
    if (mode.kind === "block") {
      const closer = `</${mode.tag}>`;
      const chunk = mode.pending + text.slice(i);
      mode.pending = "";
      i = text.length;
      const at = findCloser(mode, chunk, closer);
      if (at === -1) break;
      // The block is gone; what followed the closer is scanned as text.
      state.mode = { kind: "text" };
      text = chunk.slice(at + closer.length);
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
  return out;
}

/**
 * Where the block's closer is in `chunk` (the next part of its body), or -1, in which case the
 * chunk joins the body and an undecided tail waits in `pending`. A block opened mid-text may be
 * prose that quotes the tags, so there a closer inside backticks does not count; reasoning at the
 * start is closed by the first closer.
 */
function findCloser(mode: Extract<Mode, { kind: "block" }>, chunk: string, closer: string): number {
  let k = 0;
  if (mode.leading) {
    const at = chunk.indexOf(closer);
    if (at !== -1) return at;
    k = chunk.length;
    for (let n = Math.min(closer.length - 1, chunk.length); n > 0; n--) {
      if (closer.startsWith(chunk.slice(-n))) {
        k = chunk.length - n;
        break;
      }
    }
  } else {
    while (k < chunk.length) {
      if (chunk[k] === "`") {
        let n = 1;
        while (chunk[k + n] === "`") n++;
        if (k + n === chunk.length) break; // the run may go on in the next delta
        if (mode.fence === 0) mode.fence = n;
        else if (n === mode.fence) mode.fence = 0;
        k += n;
        continue;
      }
      if (mode.fence === 0 && chunk[k] === "<") {
        if (chunk.startsWith(closer, k)) return k;
        if (k + closer.length > chunk.length && closer.startsWith(chunk.slice(k))) break; // cut by the end of the delta
      }
      k++;
    }
  }
  mode.parts.push(chunk.slice(0, k));
  mode.pending = chunk.slice(k);
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
      state.mode = { kind: "block", tag: name, leading: state.atStart, parts: [], pending: "", fence: 0 };
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

/**
 * Openers in the middle that turn out to be prose are shown and what follows them scanned again;
 * past this many in one reply (a model stuck repeating "<think>") the rest is shown as it is,
 * so the work stays linear and the stack shallow.
 */
const MAX_RESCANS = 16;

/** The end of the text: decide what was held back. */
function finish(state: State): string {
  let out = "";
  for (let rescans = 0; ; rescans++) {
    const mode = state.mode;
    if (mode.kind !== "block" || mode.leading) break;
    const body = mode.parts.join("") + mode.pending;
    if (body.trim() === "") break;
    // Never closed, not at the start: prose that mentions the tag. It is shown, its rest scanned as text.
    state.mode = { kind: "text" };
    out += emit(state, `<${mode.tag}>`);
    if (rescans >= MAX_RESCANS) {
      out += emit(state, body.trimEnd());
      break;
    }
    out += scanText(state, body, true);
  }
  state.mode = { kind: "text" };
  state.held = "";
  return out;
}
