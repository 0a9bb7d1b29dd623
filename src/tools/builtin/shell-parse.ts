/**
 * Just enough shell syntax for exec's guard: the commands a line runs (for allow patterns) and the
 * words it passes (for paths). Not a shell: where it cannot tell, it errs towards refusing.
 */

/** `'…'`, `"…"`, or bash's `$'…'` (in which a backslash escapes, `\'` included). */
type Quote = "'" | '"' | "`" | "$'";
const closerOf = (quote: Quote) => (quote === "$'" ? "'" : quote);
const isAnsiQuote = (command: string, i: number) => command[i] === "$" && command[i + 1] === "'";

/** A `$(`, `<(` or `>(` body, or a backtick body, starting at `open` (the index after the opener). */
function bodyEnd(command: string, open: number, closer: ")" | "`"): number {
  let depth = 0;
  let quote: Quote | undefined;
  for (let i = open; i < command.length; i++) {
    const ch = command[i]!;
    if (ch === "\\" && quote !== "'") {
      i++;
      continue;
    }
    if (quote) {
      if (ch === closerOf(quote)) quote = undefined;
      continue;
    }
    if (isAnsiQuote(command, i)) {
      quote = "$'";
      i++;
    } else if (ch === "'" || (ch === '"' && closer === ")")) quote = ch;
    else if (closer === "`" && ch === "`") return i;
    else if (closer === ")" && ch === "(") depth++;
    else if (closer === ")" && ch === ")") {
      if (depth === 0) return i;
      depth--;
    }
  }
  return command.length;
}

/** The bodies of command substitutions (`$(…)`, backticks) and process substitutions (`<(…)`, `>(…)`), outermost first. */
export function substitutions(command: string): string[] {
  const found: string[] = [];
  // Inside single quotes nothing runs; inside double quotes $(…) and backticks still do.
  let quote: "'" | '"' | "$'" | undefined;
  for (let i = 0; i < command.length; i++) {
    const ch = command[i]!;
    if (quote === "'") {
      if (ch === "'") quote = undefined;
      continue;
    }
    if (ch === "\\") {
      i++;
      continue;
    }
    if (quote === "$'") {
      if (ch === "'") quote = undefined;
      continue;
    }
    if (!quote && isAnsiQuote(command, i)) {
      quote = "$'";
      i++;
    } else if (ch === '"') quote = quote ? undefined : '"';
    else if (ch === "'" && !quote) quote = "'";
    else if ((ch === "$" || (!quote && (ch === "<" || ch === ">"))) && command[i + 1] === "(" && command[i + 2] !== "(") {
      const end = bodyEnd(command, i + 2, ")");
      found.push(command.slice(i + 2, end));
      i = end;
    } else if (ch === "`") {
      const end = bodyEnd(command, i + 1, "`");
      found.push(command.slice(i + 1, end));
      i = end;
    }
  }
  return found;
}

/** Splits on the top-level operators `&&`, `||`, `;`, `|`, `&` and newlines (nanobot's rule: a trailing `&` stays with its command). */
export function topLevelSegments(command: string): string[] {
  const segments: string[] = [];
  let current = "";
  let quote: Quote | undefined;
  let depth = 0;
  const flush = () => {
    const s = current.trim();
    if (s) segments.push(s);
    current = "";
  };
  for (let i = 0; i < command.length; i++) {
    const ch = command[i]!;
    if (ch === "\\" && quote !== "'") {
      current += ch + (command[i + 1] ?? "");
      i++;
      continue;
    }
    if (quote) {
      current += ch;
      if (ch === closerOf(quote)) quote = undefined;
      continue;
    }
    if (isAnsiQuote(command, i)) {
      quote = "$'";
      current += "$'";
      i++;
      continue;
    }
    if (ch === "'" || ch === '"' || ch === "`") {
      quote = ch;
      current += ch;
      continue;
    }
    if (ch === "(") depth++;
    if (ch === ")" && depth > 0) depth--;
    if (depth === 0) {
      const two = command.slice(i, i + 2);
      if (two === "&&" || two === "||") {
        flush();
        i++;
        continue;
      }
      if (ch === "&" && !(/[<>]/.test(command[i - 1] ?? "") || command[i + 1] === ">")) {
        current += ch;
        flush();
        continue;
      }
      if (ch === ";" || ch === "|" || ch === "\n" || ch === "\r") {
        flush();
        continue;
      }
    }
    current += ch;
  }
  flush();
  return segments;
}

/** Every command a line runs: its top-level segments and, recursively, those inside substitutions. */
export function commandSegments(command: string): string[] {
  return [...topLevelSegments(command), ...substitutions(command).flatMap(commandSegments)];
}

const PUNCTUATION = new Set(["(", ")", ";", "<", ">", "|", "&"]);

/**
 * The shell words of a command after quote removal (like Python's shlex in POSIX mode with `();<>|&`
 * as punctuation). An unclosed quote runs to the end, so its path is still seen.
 */
export function shellWords(command: string): string[] {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  let quote: string | undefined;
  const end = () => {
    if (inWord) words.push(word);
    word = "";
    inWord = false;
  };
  for (let i = 0; i < command.length; i++) {
    const ch = command[i]!;
    if (quote === "'") {
      if (ch === "'") quote = undefined;
      else word += ch;
      continue;
    }
    if (ch === "\\") {
      const next = command[i + 1];
      if (next === undefined) continue;
      i++;
      if (next === "\n") continue;
      // Inside double quotes a backslash escapes only $ ` " \ (else it stays).
      word += quote === '"' && !'$`"\\'.includes(next) ? `\\${next}` : next;
      inWord = true;
      continue;
    }
    if (quote === '"') {
      if (ch === '"') quote = undefined;
      else word += ch;
      continue;
    }
    if (ch === "'" || ch === '"') {
      quote = ch;
      inWord = true;
      continue;
    }
    if (/\s/.test(ch)) {
      end();
      continue;
    }
    if (PUNCTUATION.has(ch)) {
      end();
      let run = ch;
      while (PUNCTUATION.has(command[i + 1] ?? "")) run += command[++i];
      words.push(run);
      continue;
    }
    word += ch;
    inWord = true;
  }
  end();
  return words;
}

const BOUNDARY = new Set([..." \t\r\n=({,<>|;&\"'`"]);
const HOME_FORM = /^~(?:[+-]\d*|[A-Za-z0-9_.@-]+)?(?=\/|:|$)/;
const ASSIGNMENT = /^(?:[A-Za-z_][A-Za-z0-9_]*|--?[A-Za-z0-9_.-]+)=(?:[^:=\s]*:)*$/;

const count = (s: string, ch: string) => s.split(ch).length - 1;

/** Local paths named by `file://` URIs in a word (percent-decoded, without query or fragment). */
function fileUriPaths(word: string): string[] {
  const found: string[] = [];
  for (const m of word.matchAll(/file:\/\/(?:[^/\s"']+)?(\/[^\s"'<>|;&`]*)/gi)) {
    const prefix = word.slice(0, m.index);
    let raw = m[1]!;
    if (count(prefix, "(") > count(prefix, ")")) raw = raw.split(")")[0]!;
    if (count(prefix, "{") > count(prefix, "}")) raw = raw.split(/[,}]/)[0]!;
    raw = raw.split(/[?#]/)[0]!;
    try {
      raw = decodeURIComponent(raw);
    } catch {
      // Keep it as written.
    }
    if (raw) found.push(raw);
  }
  return found;
}

/**
 * Absolute, `~` and `file://` paths in one shell word. URLs, `host:/path` (scp) and `C:/…` are not
 * local paths; `~` counts only where the shell expands it (a word's start, or an assignment's value).
 */
function wordPaths(word: string): string[] {
  const found = fileUriPaths(word);
  for (let i = 0; i < word.length; ) {
    const home = HOME_FORM.exec(word.slice(i));
    if (word[i] !== "/" && !home) {
      i++;
      continue;
    }
    const prefix = word.slice(0, i);
    const wordStart = Math.max(...[..." \t\r\n<>|;&"].map((c) => prefix.lastIndexOf(c))) + 1;
    const wordPrefix = prefix.slice(wordStart);
    const assignment = ASSIGNMENT.test(wordPrefix);
    const parameterDefault = i >= 2 && word[i - 2] === ":" && "-+?=".includes(word[i - 1]!);
    const atBoundary = home ? i === 0 || assignment : i === 0 || BOUNDARY.has(word[i - 1]!);
    if ((!atBoundary && !parameterDefault) || /[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(wordPrefix) || /^(?:[^/:=\s]+@)?[^/:=\s]+:$/.test(wordPrefix)) {
      i++;
      continue;
    }
    let end: number;
    if (i === 0 || assignment) {
      const colon = assignment ? word.indexOf(":", i) : -1;
      end = colon >= 0 ? colon : word.length;
    } else {
      const stops = new Set([..." \t\r\n\"'<>|;&`"]);
      if (count(prefix, "(") > count(prefix, ")")) stops.add(")");
      if (count(prefix, "{") > count(prefix, "}")) ["," , "}"].forEach((c) => stops.add(c));
      end = i;
      while (end < word.length && !stops.has(word[end]!)) end++;
    }
    const candidate = word.slice(i, end);
    if (candidate && !found.includes(candidate)) found.push(candidate);
    i = Math.max(end, i + 1);
  }
  return found;
}

/** Local paths a command names: in its words, and in the script of `sh -c "…"` and the like. */
export function commandPaths(command: string): string[] {
  const words = shellWords(command);
  const found: string[] = [];
  const add = (p: string) => (found.includes(p) ? undefined : found.push(p));
  words.forEach((word, index) => {
    wordPaths(word).forEach(add);
    if (index > 0 && ["-c", "-lc", "--command"].includes(words[index - 1]!)) commandPaths(word).forEach(add);
  });
  return found;
}
