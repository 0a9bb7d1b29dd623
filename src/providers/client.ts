import OpenAI, { APIError } from "openai";
import type { Logger } from "pino";
import { TroupeError } from "../errors.js";
import { createRedactor } from "../log/redact.js";
import { ZERO_USAGE, type ChatMessage, type ModelResponse, type ParsedToolCall } from "./messages.js";
import { createThinkFilter, parseToolArguments, stripThink } from "./parse.js";
import type { ResolvedProvider } from "./registry.js";
import { backoffDelay, DEFAULT_BACKOFF, isRetryable, type BackoffPolicy } from "./retry.js";

export interface ToolSchema {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface ChatRequest {
  messages: ChatMessage[];
  tools: ToolSchema[];
  signal?: AbortSignal;
  /** Visible reply text as it streams (think blocks removed). */
  onDelta?: (text: string) => void;
}

export interface LlmProvider {
  readonly name: string;
  readonly model: string;
  chat(req: ChatRequest): Promise<ModelResponse>;
}

/** The model call failed for good (not retryable, or out of retries). */
export class ModelCallError extends TroupeError {}

export interface ProviderOptions {
  maxTokens: number;
  temperature: number;
  reasoningEffort?: "low" | "medium" | "high" | null;
  stream?: boolean;
  backoff?: BackoffPolicy;
  logger?: Logger;
  /** Known secrets (secretsOf(config)); this provider's own key is always among them. */
  secrets?: Iterable<string>;
  now?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

interface Accumulated {
  content: string;
  reasoning: string;
  calls: Map<number, { id: string; name: string; args: string }>;
  finishReason: string | null;
  usage: ModelResponse["usage"];
}

function finish(acc: Accumulated): ModelResponse {
  const toolCalls: ParsedToolCall[] = [...acc.calls.entries()]
    .sort(([a], [b]) => a - b)
    .map(([i, c]) => {
      const parsed = parseToolArguments(c.args);
      return {
        id: c.id || `call_${i}`,
        name: c.name,
        rawArguments: c.args,
        arguments: "value" in parsed ? parsed.value : null,
        ...("error" in parsed ? { argumentsError: parsed.error } : {}),
      };
    });
  return {
    content: stripThink(acc.content),
    toolCalls,
    ...(acc.reasoning ? { reasoningContent: acc.reasoning } : {}),
    finishReason: acc.finishReason,
    usage: acc.usage,
  };
}

type Usage = { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number } | null | undefined;
const toUsage = (u: Usage): ModelResponse["usage"] =>
  u
    ? { promptTokens: u.prompt_tokens ?? 0, completionTokens: u.completion_tokens ?? 0, totalTokens: u.total_tokens ?? 0 }
    : ZERO_USAGE;

export function createOpenAiProvider(resolved: ResolvedProvider, opts: ProviderOptions): LlmProvider {
  const client = new OpenAI({
    apiKey: resolved.apiKey,
    baseURL: resolved.apiBase,
    defaultHeaders: resolved.extraHeaders,
    maxRetries: 0, // retries are ours: visible in logs, bounded, abortable
    timeout: 600_000,
  });
  const backoff = opts.backoff ?? DEFAULT_BACKOFF;
  const now = opts.now ?? Date.now;
  const sleep = opts.sleep ?? abortableSleep;
  const stream = opts.stream ?? true;
  // Some providers echo the key they were given ("Incorrect API key provided: sk-…"); the error
  // becomes a reply and a stored message, so it is scrubbed as the logs are.
  const redact = createRedactor([resolved.apiKey, ...(opts.secrets ?? [])]);

  async function once(req: ChatRequest): Promise<ModelResponse> {
    const body = {
      model: resolved.model,
      messages: req.messages as OpenAI.Chat.ChatCompletionMessageParam[],
      max_tokens: opts.maxTokens,
      temperature: opts.temperature,
      ...(req.tools.length ? { tools: req.tools, tool_choice: "auto" as const } : {}),
      ...(opts.reasoningEffort ? { reasoning_effort: opts.reasoningEffort } : {}),
    };
    const acc: Accumulated = { content: "", reasoning: "", calls: new Map(), finishReason: null, usage: ZERO_USAGE };
    if (!stream) {
      const r = await client.chat.completions.create({ ...body, stream: false }, { signal: req.signal });
      const choice = r.choices[0];
      const msg = choice?.message as (OpenAI.Chat.ChatCompletionMessage & { reasoning_content?: string }) | undefined;
      acc.content = msg?.content ?? "";
      acc.reasoning = msg?.reasoning_content ?? "";
      msg?.tool_calls?.forEach((c, i) => {
        if (c.type === "function") acc.calls.set(i, { id: c.id, name: c.function.name, args: c.function.arguments });
      });
      acc.finishReason = choice?.finish_reason ?? null;
      acc.usage = toUsage(r.usage);
      const visible = stripThink(acc.content);
      if (visible) req.onDelta?.(visible);
      return finish(acc);
    }
    const chunks = await client.chat.completions.create(
      { ...body, stream: true, stream_options: { include_usage: true } },
      { signal: req.signal },
    );
    const visible = createThinkFilter();
    for await (const chunk of chunks) {
      if (chunk.usage) acc.usage = toUsage(chunk.usage);
      const choice = chunk.choices[0];
      if (!choice) continue;
      const delta = choice.delta as typeof choice.delta & { reasoning_content?: string };
      if (delta.content) {
        acc.content += delta.content;
        const text = visible(delta.content);
        if (text) req.onDelta?.(text);
      }
      if (delta.reasoning_content) acc.reasoning += delta.reasoning_content;
      for (const tc of delta.tool_calls ?? []) {
        const slot = acc.calls.get(tc.index) ?? { id: "", name: "", args: "" };
        if (tc.id) slot.id = tc.id;
        if (tc.function?.name) slot.name += tc.function.name;
        if (tc.function?.arguments) slot.args += tc.function.arguments;
        acc.calls.set(tc.index, slot);
      }
      if (choice.finish_reason) acc.finishReason = choice.finish_reason;
    }
    return finish(acc);
  }

  return {
    name: resolved.spec.name,
    model: resolved.model,
    async chat(req) {
      for (let attempt = 0; ; attempt++) {
        try {
          return await once(req);
        } catch (err) {
          if (req.signal?.aborted) throw err;
          if (!isRetryable(err) || attempt >= backoff.maxRetries) {
            const status = err instanceof APIError && err.status ? ` (HTTP ${err.status})` : "";
            const why = attempt > 0 ? ` after ${attempt + 1} attempts` : "";
            throw new ModelCallError(redact(`model call to ${resolved.spec.name} failed${why}${status}: ${(err as Error).message}`), { cause: err });
          }
          const delay = backoffDelay(backoff, attempt, err, now());
          opts.logger?.warn({ provider: resolved.spec.name, attempt: attempt + 1, delayMs: Math.round(delay), err: (err as Error).message }, "model call failed, retrying");
          await sleep(delay, req.signal);
        }
      }
    },
  };
}
