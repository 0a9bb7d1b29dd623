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
      if (v === null && opts.dropNull?.([...path, name]) && !field.safeParse(null).success) continue;
      out[name] = normalizeKeys(field, v, [...path, name], unknownKeys, opts);
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
    return Object.fromEntries(entries.map(([k, v]) => [k, normalizeKeys(valueType, v, [...path, k], unknownKeys, opts)]));
  }
  if (def.type === "array" && def.element && Array.isArray(value)) {
    const element = def.element;
    return value.map((v, i) => normalizeKeys(element, v, [...path, String(i)], unknownKeys, opts));
  }
  return value;
}
