/**
 * An MCP tool's inputSchema made acceptable to OpenAI-style function calling: the root is an
 * object with properties, nullable unions (`{type: ["string","null"]}`, `anyOf: [X, {type:"null"}]`)
 * become X marked nullable, and nested schemas get the same treatment.
 */
type Schema = Record<string, unknown>;

const isObject = (v: unknown): v is Schema => typeof v === "object" && v !== null && !Array.isArray(v);

function nullableBranch(options: unknown): Schema | undefined {
  if (!Array.isArray(options)) return undefined;
  const rest = options.filter((o) => !(isObject(o) && o.type === "null"));
  return rest.length === 1 && rest.length < options.length && isObject(rest[0]) ? rest[0] : undefined;
}

function normalizeNode(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(normalizeNode);
  if (!isObject(node)) return node;
  let out: Schema = { ...node };
  if (Array.isArray(out.type)) {
    const types = (out.type as unknown[]).filter((t) => t !== "null");
    if (types.length === 1 && types.length < out.type.length) out = { ...out, type: types[0], nullable: true };
  }
  for (const key of ["anyOf", "oneOf"] as const) {
    const branch = nullableBranch(out[key]);
    if (branch) {
      const { [key]: _dropped, ...rest } = out;
      out = { ...rest, ...branch, nullable: true };
    }
  }
  for (const [key, value] of Object.entries(out)) {
    if (key === "properties" || key === "$defs" || key === "definitions" || key === "patternProperties") {
      if (isObject(value)) out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalizeNode(v)]));
    } else if (key === "items" || key === "additionalProperties" || key === "not" || key === "anyOf" || key === "oneOf" || key === "allOf" || key === "prefixItems") {
      out[key] = normalizeNode(value);
    }
  }
  return out;
}

export function normalizeInputSchema(schema: unknown): Schema {
  const normalized = normalizeNode(schema);
  const root = isObject(normalized) ? normalized : {};
  const { $schema: _ignored, ...rest } = root;
  return { ...rest, type: "object", properties: isObject(rest.properties) ? rest.properties : {} };
}
