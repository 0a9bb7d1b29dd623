import { jsonrepair } from "jsonrepair";

/** Tool-call arguments as an object: strict JSON first, then repaired JSON, else the reason. */
export function parseToolArguments(raw: string): { value: Record<string, unknown> } | { error: string } {
  const text = raw.trim();
  if (text === "") return { value: {} };
  const asObject = (v: unknown) => (typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);
  try {
    const v = asObject(JSON.parse(text));
    if (v) return { value: v };
  } catch {
    // fall through to repair
  }
  try {
    const v = asObject(JSON.parse(jsonrepair(text)));
    if (v) return { value: v };
    return { error: "the arguments are not a JSON object" };
  } catch (err) {
    return { error: `the arguments are not valid JSON (${(err as Error).message.split("\n")[0]})` };
  }
}

/** Removes <think>…</think> blocks (and an unclosed trailing one) from a complete reply. */
export function stripThink(text: string): string {
  return text
    .replace(/<think>[\s\S]*?<\/think>/g, "")
    .replace(/<think>[\s\S]*$/, "")
    .trim();
}

/**
 * The same for a stream of deltas: text inside <think> is held back, and a tag split across
 * deltas is buffered until it is known.
 */
export function createThinkFilter(): (delta: string) => string {
  let inThink = false;
  let pending = "";
  return (delta) => {
    let text = pending + delta;
    pending = "";
    let out = "";
    while (text.length > 0) {
      const tag = inThink ? "</think>" : "<think>";
      const idx = text.indexOf(tag);
      if (idx >= 0) {
        if (!inThink) out += text.slice(0, idx);
        text = text.slice(idx + tag.length);
        inThink = !inThink;
        continue;
      }
      // Hold back a suffix that could be the start of the tag.
      let keep = 0;
      for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) {
        if (tag.startsWith(text.slice(-n))) {
          keep = n;
          break;
        }
      }
      if (!inThink) out += text.slice(0, text.length - keep);
      pending = text.slice(text.length - keep);
      text = "";
    }
    return out;
  };
}
