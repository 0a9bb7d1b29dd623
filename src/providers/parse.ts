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

export { createThinkFilter, stripThink, type ThinkFilter } from "./think.js";
