import { z } from "zod";
import type { ImagePart } from "../context/media.js";
import { BUILTIN_JSON_SCHEMAS } from "./builtin-json-schemas.js";

/** What a tool gets besides its arguments. */
export interface ToolContext {
  workspace: string;
  sessionKey: string;
  turnId: string;
  callId: string;
  /** sessionKey:turnId:callId — stable across a resumed turn, for tools that can dedupe. */
  idempotencyKey: string;
  signal: AbortSignal;
  channel?: string;
  chatId?: string;
}

export interface Tool {
  name: string;
  description: string;
  /** A zod schema (turned into JSON Schema for the model) or raw JSON Schema (MCP tools). */
  parameters: z.ZodType | { jsonSchema: Record<string, unknown> };
  /**
   * The zod parameters' JSON Schema made ahead (built-in tools, from src/tools/builtin-json-schemas.ts):
   * what the model is shown, without converting zod at each start. zod still validates the arguments.
   */
  parametersJsonSchema?: Record<string, unknown>;
  /** No side effects: may run concurrently with other read-only tools, and is re-run on recovery. */
  readOnly?: boolean;
  /** Never runs beside another tool. */
  exclusive?: boolean;
  /** Safe to run twice with the same arguments: re-run on recovery even if not read-only. */
  idempotent?: boolean;
  source?: "builtin" | "mcp";
  execute(args: Record<string, unknown>, ctx: ToolContext): Promise<string>;
  /**
   * For a tool whose result can stand for an image (read_file on a PNG): the image that result
   * names, read again when the next model request is built, or undefined. Results stay text, so
   * checkpoints and sessions keep the path, not the bytes (src/tools/tool-images.ts).
   */
  imageOf?(result: string): Promise<ImagePart | undefined>;
}

/** A failure the model should see and can react to (not an infrastructure error). */
export class ToolError extends Error {}

export const TOOL_ERROR_HINT = "[Analyze the error above and try a different approach.]";

export function jsonSchemaOf(tool: Tool): Record<string, unknown> {
  // Asked first: a built-in tool's zod parameters are built at first use (lazySchema), its first call's.
  if (tool.parametersJsonSchema) return tool.parametersJsonSchema;
  return "jsonSchema" in tool.parameters ? tool.parameters.jsonSchema : zodJsonSchema(tool.parameters);
}

/** A zod schema of arguments as JSON Schema for the model (costly: ~2 ms for the built-in tools at a cold start). */
export function zodJsonSchema(parameters: z.ZodType): Record<string, unknown> {
  const schema = z.toJSONSchema(parameters, { io: "input" }) as Record<string, unknown>;
  delete schema.$schema;
  return schema;
}

/**
 * A built-in tool's definition with its parameters typed by the zod schema; its JSON Schema is the one
 * made ahead under its name (test/unit/tool-json-schemas.test.ts checks each equals zod's conversion).
 */
export function defineTool<S extends z.ZodObject>(
  def: Omit<Tool, "parameters" | "execute"> & {
    parameters: S;
    execute(args: z.infer<S>, ctx: ToolContext): Promise<string>;
    imageOf?(result: string): Promise<ImagePart | undefined>;
  },
): Tool {
  const tool = def as unknown as Tool;
  if (Object.hasOwn(BUILTIN_JSON_SCHEMAS, tool.name)) tool.parametersJsonSchema = BUILTIN_JSON_SCHEMAS[tool.name];
  return tool;
}
