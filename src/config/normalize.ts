import type { z } from "zod";

/**
 * Accepts camelCase and snake_case keys by walking the raw value along the schema: only keys
 * that name schema fields are renamed, so user-chosen keys (extraHeaders, mcp env, provider names)
 * pass through untouched. Keys the schema does not know are reported, then dropped.
 */

interface Def {
  type: string;
  innerType?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  valueType?: z.ZodType;
  element?: z.ZodType;
  in?: z.ZodType;
}

const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

export const snakeToCamel = (key: string): string => key.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

export const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

export interface NormalizeOptions {
  /** Filled with the schema's field names beside each unknown key (for did-you-mean). */
  siblings?: Map<string, string[]>;
  /** Whether a null the field does not take means "use the default" here (nanobot takes null there). */
  dropNull?: (path: string[]) => boolean;
  /** The text of the environment override that set the value at `path`, if one did. */
  envText?: (path: string[]) => string | undefined;
}

/**
 * An override's value as a field takes it (nanobot's pydantic-settings: a str field keeps the
 * variable's text; numbers, booleans and lists are parsed from it). The override was parsed as a JSON
 * literal; a field that takes the text as given, or wants a string where the literal is none (an
 * all-digit api key, a chat id, "true", "null"), gets the text back.
 */
function asField(field: z.ZodType, value: unknown, path: string[], opts: NormalizeOptions): unknown {
  if (typeof value === "string") return value;
  const text = opts.envText?.(path);
  if (text === undefined) return value;
  if (field.safeParse(text).success) return text;
  const parsed = field.safeParse(value);
  const wantsText = !parsed.success && parsed.error.issues.some((i) => i.path.length === 0 && i.code === "invalid_type" && i.expected === "string");
  return wantsText ? text : value;
}

export function normalizeKeys(schema: z.ZodType, value: unknown, path: string[], unknownKeys: string[], opts: NormalizeOptions = {}): unknown {
  let def = defOf(schema);
  while (def.innerType || def.type === "pipe") {
    schema = (def.innerType ?? def.in) as z.ZodType;
    def = defOf(schema);
  }
  if (def.type === "object" && def.shape && isPlainObject(value)) {
    const shape = def.shape;
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      // Own fields only: `key in shape` would take "constructor" or "__proto__" from Object.prototype for a field.
      const name = Object.hasOwn(shape, key) ? key : snakeToCamel(key);
      const field = Object.hasOwn(shape, name) ? shape[name] : undefined;
      if (!field) {
        unknownKeys.push([...path, key].join("."));
        opts.siblings?.set([...path, key].join("."), Object.keys(shape));
        continue;
      }
      const taken = asField(field, v, [...path, name], opts);
      if (taken === null && opts.dropNull?.([...path, name]) && !field.safeParse(null).success) continue;
      out[name] = normalizeKeys(field, taken, [...path, name], unknownKeys, opts);
    }
    return out;
  }
  if (def.type === "record" && def.valueType && isPlainObject(value)) {
    const valueType = def.valueType;
    const entries = Object.entries(value).filter(([k]) => {
      // A JSON "__proto__" key is an own key here, but no object can hold it as one: report it rather than drop it silently.
      if (k === "__proto__") unknownKeys.push([...path, k].join("."));
      return k !== "__proto__";
    });
    return Object.fromEntries(entries.map(([k, v]) => [k, normalizeKeys(valueType, asField(valueType, v, [...path, k], opts), [...path, k], unknownKeys, opts)]));
  }
  if (def.type === "array" && def.element && Array.isArray(value)) {
    const element = def.element;
    return value.map((v, i) => normalizeKeys(element, v, [...path, String(i)], unknownKeys, opts));
  }
  return value;
}
