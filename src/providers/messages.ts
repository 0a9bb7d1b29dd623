import { z } from "zod";
import { lazySchema } from "../lazy-schema.js";

/** Chat messages in the OpenAI wire shape; stored in sessions and turn checkpoints as is. */

export const toolCallSchema = lazySchema(() => z.object({
  id: z.string(),
  type: z.literal("function").default("function"),
  function: z.object({ name: z.string(), arguments: z.string() }),
}));
export type ToolCallWire = z.infer<typeof toolCallSchema>;

const contentPart = lazySchema(() => z.union([
  z.object({ type: z.literal("text"), text: z.string() }),
  z.object({ type: z.literal("image_url"), image_url: z.object({ url: z.string() }) }),
]));

export const chatMessageSchema = lazySchema(() => z.discriminatedUnion("role", [
  z.object({ role: z.literal("system"), content: z.string() }),
  z.object({ role: z.literal("user"), content: z.union([z.string(), z.array(contentPart)]) }),
  z.object({
    role: z.literal("assistant"),
    content: z.string().nullable(),
    tool_calls: z.array(toolCallSchema).optional(),
    /** Kept for providers (DeepSeek-R1, Kimi) that want their reasoning handed back. */
    reasoning_content: z.string().optional(),
  }),
  z.object({ role: z.literal("tool"), tool_call_id: z.string(), name: z.string().optional(), content: z.string() }),
]));
export type ChatMessage = z.infer<typeof chatMessageSchema>;

export const usageSchema = lazySchema(() => z.object({
  promptTokens: z.number().int().nonnegative(),
  completionTokens: z.number().int().nonnegative(),
  totalTokens: z.number().int().nonnegative(),
}));
export type Usage = z.infer<typeof usageSchema>;
export const ZERO_USAGE: Usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
/** Running totals stay safe integers however long a session lives (the schema above rejects anything else). */
const sum = (a: number, b: number) => Math.min(a + b, Number.MAX_SAFE_INTEGER);
export const addUsage = (a: Usage, b: Usage): Usage => ({
  promptTokens: sum(a.promptTokens, b.promptTokens),
  completionTokens: sum(a.completionTokens, b.completionTokens),
  totalTokens: sum(a.totalTokens, b.totalTokens),
});

/** A tool call as the model asked for it, its arguments parsed (or the reason they could not be). */
export const parsedToolCallSchema = lazySchema(() => z.object({
  id: z.string(),
  name: z.string(),
  rawArguments: z.string(),
  arguments: z.record(z.string(), z.unknown()).nullable(),
  argumentsError: z.string().optional(),
}));
export type ParsedToolCall = z.infer<typeof parsedToolCallSchema>;

export const modelResponseSchema = lazySchema(() => z.object({
  content: z.string(),
  toolCalls: z.array(parsedToolCallSchema),
  reasoningContent: z.string().optional(),
  finishReason: z.string().nullable(),
  usage: usageSchema,
  /** Who answered, as "<provider>/<model sent>" (with fallback models, not always the configured one). */
  model: z.string().optional(),
}));
export type ModelResponse = z.infer<typeof modelResponseSchema>;

/** The assistant message to append to the conversation for a model response. */
export function assistantMessage(r: ModelResponse): ChatMessage {
  return {
    role: "assistant",
    content: r.content || (r.toolCalls.length ? null : ""),
    ...(r.toolCalls.length
      ? {
          tool_calls: r.toolCalls.map((c) => ({
            id: c.id,
            type: "function" as const,
            function: { name: c.name, arguments: c.arguments ? JSON.stringify(c.arguments) : c.rawArguments },
          })),
        }
      : {}),
    ...(r.reasoningContent ? { reasoning_content: r.reasoningContent } : {}),
  };
}
