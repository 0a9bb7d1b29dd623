/**
 * Tool arguments as a model sends them, made to fit the tool's JSON Schema before validation:
 * obvious slips are cast ("60" for an integer, "yes" for a boolean, at any depth), and arguments the
 * tool does not take are found, so they are refused by name instead of silently dropped.
 */

type Schema = Record<string, unknown>;

const TRUE = new Set(["true", "1", "yes"]);
const FALSE = new Set(["false", "0", "no"]);
const INTEGER = /^[+-]?\d+$/;
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The schema that describes a value: a union with null (`["integer", "null"]`, or anyOf/oneOf with
 * one non-null branch, as zod writes `.nullable()`) stands for its non-null part.
 */
function resolve(schema: unknown): Schema | undefined {
  if (!isObject(schema)) return undefined;
  const branches = (schema.anyOf ?? schema.oneOf) as unknown;
  if (Array.isArray(branches)) {
    const real = branches.filter((b) => !(isObject(b) && b.type === "null"));
    return real.length === 1 ? resolve(real[0]) : schema;
  }
  return schema;
}

/** The first non-null type a schema names, as nanobot reads a union. */
function typeOf(schema: Schema): string | undefined {
  const types = ([] as unknown[]).concat(schema.type ?? []).filter((t): t is string => typeof t === "string" && t !== "null");
  if (types.length === 0 && isObject(schema.properties)) return "object";
  return types[0];
}

function castValue(value: unknown, raw: unknown): unknown {
  const schema = resolve(raw);
  if (!schema || value === null || value === undefined) return value;
  const type = typeOf(schema);
  if (typeof value === "string") {
    const text = value.trim();
    if (type === "integer" && INTEGER.test(text)) return Number(text);
    if (type === "number" && NUMBER.test(text)) return Number(text);
    if (type === "boolean") {
      const low = text.toLowerCase();
      if (TRUE.has(low)) return true;
      if (FALSE.has(low)) return false;
    }
    return value;
  }
  // A number or boolean where text is expected is the text it spells; a boolean is never a number.
  if (type === "string" && (typeof value === "number" || typeof value === "boolean")) return String(value);
  if (type === "array" && Array.isArray(value)) return schema.items === undefined ? value : value.map((v) => castValue(v, schema.items));
  if (type === "object" && isObject(value)) return castObject(value, schema);
  return value;
}

function castObject(obj: Record<string, unknown>, schema: Schema): Record<string, unknown> {
  const props = isObject(schema.properties) ? schema.properties : {};
  const extra = isObject(schema.additionalProperties) ? schema.additionalProperties : undefined;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(obj)) {
    const sub = Object.hasOwn(props, key) ? props[key] : extra;
    out[key] = sub === undefined ? value : castValue(value, sub);
  }
  return out;
}

/** Casts obvious slips throughout the arguments, per the tool's JSON Schema; anything else is left for validation. */
export function castArguments(args: Record<string, unknown>, schema: Record<string, unknown>): Record<string, unknown> {
  return castObject(args, schema);
}

export interface UnknownArguments {
  /** Where the object is ("" for the arguments themselves, else e.g. "meta" or "edits[1]"). */
  at: string;
  names: string[];
  accepted: string[];
}

/**
 * Arguments the schema does not name, at any depth. An object is closed when its schema says
 * `additionalProperties: false`, and also when it says nothing about it and `closed` is set (troupe's
 * own tools, whose zod schemas would otherwise drop such arguments without a word).
 */
export function unknownArguments(args: Record<string, unknown>, schema: Record<string, unknown>, closed: boolean): UnknownArguments[] {
  const found: UnknownArguments[] = [];
  const walk = (value: unknown, raw: unknown, at: string) => {
    const s = resolve(raw);
    if (!s) return;
    const type = typeOf(s);
    if (type === "array" && Array.isArray(value)) {
      value.forEach((v, i) => walk(v, s.items, `${at}[${i}]`));
      return;
    }
    if (type !== "object" || !isObject(value)) return;
    const props = isObject(s.properties) ? s.properties : {};
    const extra = s.additionalProperties;
    const shut = extra === false || (extra === undefined && closed && s.patternProperties === undefined);
    const names = shut ? Object.keys(value).filter((k) => !Object.hasOwn(props, k)) : [];
    if (names.length) found.push({ at, names, accepted: Object.keys(props) });
    for (const [key, v] of Object.entries(value)) {
      if (Object.hasOwn(props, key)) walk(v, props[key], at ? `${at}.${key}` : key);
    }
  };
  walk(args, schema, "");
  return found;
}

/** One sentence per object with unknown arguments: what was given, and what the tool takes there. */
export function describeUnknown(tool: string, found: UnknownArguments[]): string {
  return found
    .map(({ at, names, accepted }) => {
      const what = names.length === 1 ? `unknown argument "${names[0]}"` : `unknown arguments ${names.map((n) => `"${n}"`).join(", ")}`;
      const where = at ? ` in ${at}` : "";
      const takes = accepted.length ? `accepted${where}: ${accepted.join(", ")}` : `${at || tool} takes no arguments`;
      return `${tool}: ${what}${where} (${takes})`;
    })
    .join("; ");
}
