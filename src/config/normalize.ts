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

export function normalizeKeys(schema: z.ZodType, value: unknown, path: string[], unknownKeys: string[]): unknown {
  let def = defOf(schema);
  while (def.innerType || def.type === "pipe") {
    schema = (def.innerType ?? def.in) as z.ZodType;
    def = defOf(schema);
  }
  if (def.type === "object" && def.shape && isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      const name = key in def.shape ? key : snakeToCamel(key);
      const field = def.shape[name];
      if (!field) {
        unknownKeys.push([...path, key].join("."));
        continue;
      }
      out[name] = normalizeKeys(field, v, [...path, name], unknownKeys);
    }
    return out;
  }
  if (def.type === "record" && def.valueType && isPlainObject(value)) {
    const valueType = def.valueType;
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, normalizeKeys(valueType, v, [...path, k], unknownKeys)]),
    );
  }
  if (def.type === "array" && def.element && Array.isArray(value)) {
    const element = def.element;
    return value.map((v, i) => normalizeKeys(element, v, [...path, String(i)], unknownKeys));
  }
  return value;
}
