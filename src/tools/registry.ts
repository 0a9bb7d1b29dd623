import { compareNames } from "../compare-names.js";
import type { ToolSchema } from "../providers/client.js";
import { jsonSchemaOf, TOOL_ERROR_HINT, ToolError, type Tool, type ToolContext } from "./contract.js";
import { castArguments, describeUnknown, unknownArguments } from "./arguments.js";
import { persistLongResult } from "./persist-result.js";

export interface ToolRegistry {
  register(tool: Tool): void;
  /** Takes a tool out (an MCP server's tool list changed); the next model call no longer sees it. */
  unregister(name: string): void;
  get(name: string): Tool | undefined;
  names(): string[];
  /** Function schemas for the model: built-ins by name, then MCP tools by name. */
  schemas(allow?: (tool: Tool) => boolean): ToolSchema[];
  /** Casts, validates and runs one call; every failure comes back as text ending in a hint. */
  execute(name: string, args: Record<string, unknown> | null, ctx: ToolContext, argumentsError?: string): Promise<string>;
}

const withHint = (message: string) => `Error: ${message}\n\n${TOOL_ERROR_HINT}`;

export { castArguments } from "./arguments.js";

function validate(tool: Tool, schema: Record<string, unknown>, args: Record<string, unknown>): { ok: true; args: Record<string, unknown> } | { ok: false; error: string } {
  // Built-in tools take only what they name (their zod schemas would drop the rest unseen);
  // an MCP tool's schema decides for itself with additionalProperties.
  const unknown = unknownArguments(args, schema, !("jsonSchema" in tool.parameters));
  if (unknown.length) return { ok: false, error: `${describeUnknown(tool.name, unknown)}. Call it again with only the accepted arguments.` };
  if ("jsonSchema" in tool.parameters) {
    const required = (tool.parameters.jsonSchema.required ?? []) as string[];
    const missing = required.filter((k) => args[k] === undefined);
    return missing.length ? { ok: false, error: `missing required parameter(s): ${missing.join(", ")}` } : { ok: true, args };
  }
  const result = tool.parameters.safeParse(args);
  if (result.success) return { ok: true, args: result.data as Record<string, unknown> };
  const problems = result.error.issues.map((i) => `${i.path.map(String).join(".") || "(arguments)"}: ${i.message}`);
  return { ok: false, error: `invalid arguments for ${tool.name}: ${problems.join("; ")}` };
}

/** A name reduced to its lower-case letters and digits: "readFile", "read-file" and "READ_FILE" all become "readfile". */
const lookupKey = (name: string) => name.toLowerCase().replace(/[^\p{L}\p{N}]/gu, "");

/**
 * The one tool an unknown name most likely means (nanobot's _suggest_name): the name that is the same
 * once case, "_", "-" and spaces are set aside. Only a unique match: a suggestion is never a guess.
 */
export function suggestToolName(name: string, names: Iterable<string>): string | undefined {
  const key = lookupKey(name);
  if (!key) return undefined;
  const matches = [...names].filter((n) => lookupKey(n) === key);
  return matches.length === 1 ? matches[0] : undefined;
}

export interface ToolRegistryOptions {
  /** tools.maxToolResultChars: longer results (errors too) are saved to a file and cut. */
  maxResultChars?: number;
}

/** The schema default of tools.maxToolResultChars, for a registry made without a config. */
export const DEFAULT_MAX_RESULT_CHARS = 16_000;

export function createToolRegistry(tools: Tool[] = [], opts: ToolRegistryOptions = {}): ToolRegistry {
  const byName = new Map<string, Tool>();
  // Converting zod to JSON Schema is costly and the answer never changes: once per tool.
  const jsonSchemas = new Map<string, Record<string, unknown>>();
  const schemaOf = (tool: Tool) => {
    let schema = jsonSchemas.get(tool.name);
    if (!schema) jsonSchemas.set(tool.name, (schema = jsonSchemaOf(tool)));
    return schema;
  };
  // Every model call sends the whole list: it is built once per change of the tools, the same array until then.
  let allSchemas: ToolSchema[] | undefined;
  const registry: ToolRegistry = {
    register(tool) {
      byName.set(tool.name, tool);
      jsonSchemas.delete(tool.name);
      allSchemas = undefined;
    },
    unregister(name) {
      byName.delete(name);
      jsonSchemas.delete(name);
      allSchemas = undefined;
    },
    get: (name) => byName.get(name),
    names: () => [...byName.keys()].sort(),
    schemas(allow) {
      if (!allow) return (allSchemas ??= registry.schemas(() => true));
      const rank = (t: Tool) => (t.source === "mcp" ? 1 : 0);
      return [...byName.values()]
        .filter(allow)
        .sort((a, b) => rank(a) - rank(b) || compareNames(a.name, b.name))
        .map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: schemaOf(t) } }));
    },
    async execute(name, args, ctx, argumentsError) {
      // Whatever comes back goes into the turn's checkpoint and the journal: every path is capped,
      // an error's text before its hint, so the hint stays in view.
      const cap = (text: string) => persistLongResult(text, name, ctx, opts.maxResultChars ?? DEFAULT_MAX_RESULT_CHARS);
      const fail = async (message: string) => withHint(await cap(message));
      const tool = byName.get(name);
      if (!tool) {
        const suggestion = suggestToolName(name, byName.keys());
        const hint = suggestion ? ` Did you mean '${suggestion}'? Tool names must match exactly.` : "";
        return fail(`tool "${name}" not found.${hint} Available tools: ${registry.names().join(", ")}`);
      }
      if (argumentsError || args === null) return fail(`could not parse the arguments for ${name}: ${argumentsError ?? "no arguments"}`);
      const schema = schemaOf(tool);
      const checked = validate(tool, schema, castArguments(args, schema));
      if (!checked.ok) return fail(checked.error);
      let result: unknown;
      try {
        result = await tool.execute(checked.args, ctx);
      } catch (err) {
        if (ctx.signal.aborted) throw err;
        return fail(err instanceof ToolError ? err.message : `${name} failed: ${(err as Error).message}`);
      }
      // An MCP server's answer is not typed by us: anything but text is spelled out.
      const text = typeof result === "string" ? result : (JSON.stringify(result) ?? "");
      return text === "" ? "(no output)" : cap(text);
    },
  };
  tools.forEach((t) => registry.register(t));
  return registry;
}
