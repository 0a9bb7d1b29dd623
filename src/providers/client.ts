import { createChatHttp, type ChatHttp } from "./chat-http.js";
import { encodeRequest } from "./request-body.js";
import { deepMerge, generationFields } from "./generation.js";
import type { Logger } from "pino";
import { TroupeError } from "../errors.js";
import type { ChatMessage, ModelResponse } from "./messages.js";
import { createThinkFilter } from "./think.js";
import { createRedactor } from "../log/redact.js";
import type { ResolvedProvider } from "./registry.js";
import { backoffDelay, DEFAULT_BACKOFF, isRetryable, ModelTimeoutError, PERSISTENT_MAX_DELAY_MS, type BackoffPolicy, type RetryMode } from "./retry.js";
import { createReplyAccumulator, MAX_TOOL_CALLS } from "./wire.js";
import { createWatchdog, type Limited } from "./watchdog.js";
import { AttemptAbort } from "./attempt-abort.js";
import { describeModelError } from "./model-errors.js";

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
  /** A failed attempt is retried after `delayMs` (for progress shown to a waiting user). */
  onRetry?: (retry: { attempt: number; delayMs: number; status: number | null; error: string }) => void;
  /** A model failed for good and the next of agents.defaults.fallbackModels is tried (see fallback.ts). */
  onFallback?: (fallback: { from: string; to: string; error: string }) => void;
  /** This call's sampling temperature instead of the configured one (spawn's temperature); a model that takes none, or a fixed one, keeps its rule. */
  temperature?: number;
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
  /** nanobot's values (agents.defaults.reasoningEffort); "none" sends none. */
  reasoningEffort?: string | null;
  stream?: boolean;
  backoff?: BackoffPolicy;
  /** agents.defaults.providerRetryMode: "persistent" retries transient failures without a bound (each attempt still ends at timeoutMs). */
  retryMode?: RetryMode;
  /** agents.defaults.modelIdleTimeoutSeconds: an attempt that receives no byte for this long is abandoned and retried. */
  idleTimeoutMs?: number;
  /** agents.defaults.modelTimeoutSeconds: one call, retries included, ends after this long (in persistent mode: each attempt). */
  timeoutMs?: number;
  /** agents.defaults.maxReplyChars: reply text beyond this is cut; a tool call whose arguments take the reply past it is refused. */
  maxReplyChars?: number;
  logger?: Logger;
  /** Known secrets (secretsOf(config)); this provider's own key is always among them. */
  secrets?: Iterable<string>;
  now?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export const DEFAULT_IDLE_TIMEOUT_MS = 60_000;
export const DEFAULT_TIMEOUT_MS = 600_000;
export const DEFAULT_MAX_REPLY_CHARS = 100_000;

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

const seconds = (ms: number) => `${Number((ms / 1000).toFixed(3))} s`;

/** An AbortController that also aborts (with the same reason) when `parent` does. */
function childController(parent?: AbortSignal): { controller: AbortController; dispose: () => void } {
  const controller = new AbortController();
  if (!parent) return { controller, dispose: () => {} };
  const onAbort = () => controller.abort(parent.reason);
  if (parent.aborted) onAbort();
  else parent.addEventListener("abort", onAbort, { once: true });
  return { controller, dispose: () => parent.removeEventListener("abort", onAbort) };
}

/**
 * One call's time limits, watched by its provider's watchdog (watchdog.ts), and what they abort:
 * silence and (retrying without a bound) the attempt's deadline end the attempt under way; the call's
 * deadline ends whatever is current (an attempt, or the wait before the next) and every one after.
 */
class CallLimits implements Limited {
  heardAt = 0;
  idleMs = Infinity;
  deadline = Infinity;
  /** The attempt under way (between attempts, none). */
  attempt: AttemptAbort | undefined;
  /** The attempt, or the wait between two. */
  current: AttemptAbort | AbortController | undefined;
  /** The call's deadline ran out: what starts after is aborted at once. */
  expired: ModelTimeoutError | undefined;
  /** For the transport, per byte received. */
  readonly heard = () => {
    this.heardAt = Date.now();
  };
  constructor(private readonly errors: { idle: () => ModelTimeoutError; timedOut: (retryable: boolean) => ModelTimeoutError; persistent: boolean }) {}

  expire(limit: "idle" | "deadline") {
    if (limit === "idle") this.attempt?.abort(this.errors.idle());
    else if (this.errors.persistent) this.attempt?.abort(this.errors.timedOut(true));
    else {
      this.expired = this.errors.timedOut(false);
      this.current?.abort(this.expired);
    }
  }
}

export function createOpenAiProvider(resolved: ResolvedProvider, opts: ProviderOptions): LlmProvider {
  const idleTimeoutMs = opts.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxReplyChars = opts.maxReplyChars ?? DEFAULT_MAX_REPLY_CHARS;
  // One connection pool per provider, built with the first call (not per call: that cost CPU on every turn).
  let http: ChatHttp | undefined;
  const backoff = opts.backoff ?? DEFAULT_BACKOFF;
  const now = opts.now ?? Date.now;
  const sleep = opts.sleep ?? abortableSleep;
  const stream = opts.stream ?? true;
  const persistent = opts.retryMode === "persistent";
  /** Which model answered, for the turn's record (a fallback may answer instead of the configured one). */
  const answeredBy = `${resolved.spec.name}/${resolved.model}`;
  // Some providers echo the key they were given ("Incorrect API key provided: sk-…"); the error
  // becomes a reply and a stored message, so it is scrubbed as the logs are.
  const redact = createRedactor([resolved.apiKey, ...(opts.secrets ?? [])]);
  // One timer watches the limits of all this provider's calls in flight (not two timers per call).
  const watchdog = createWatchdog();
  const errors = {
    idle: () => new ModelTimeoutError(`no data from ${resolved.apiBase} for ${seconds(idleTimeoutMs)} (model idle timeout); the call was abandoned`, true),
    timedOut: (retryable: boolean) => new ModelTimeoutError(`no complete reply from ${resolved.apiBase} within ${seconds(timeoutMs)} (model timeout)`, retryable),
    persistent,
  };

  /**
   * The request's fields but the messages and tools, the same objects on every call, so their JSON
   * is encoded once (request-body.ts encodeRequest): the keys in the order the body always had.
   */
  // Which token limit and temperature the model takes (gpt-5 and the o-series differ), and the reasoning fields.
  const shape = (temperature: number, withTools: boolean): Record<string, unknown> => {
    const generation = generationFields(resolved.spec, resolved.model, { ...opts, temperature, thinkingStyle: resolved.thinkingStyle });
    return {
      model: resolved.model,
      messages: null,
      ...generation.limits,
      ...(withTools ? { tool_choice: "auto" } : {}),
      ...(generation.reasoningEffort ? { reasoning_effort: generation.reasoningEffort } : {}),
      ...(stream ? { stream: true, stream_options: { include_usage: true } } : { stream: false }),
      // The thinking switch, then providers.*.extraBody over it (as nanobot's extra_body: it may replace any field but the messages, tools and stream).
      ...deepMerge(generation.extra, resolved.extraBody ?? {}),
    };
  };
  const shapes = (temperature: number) => ({ withTools: shape(temperature, true), withoutTools: shape(temperature, false) });
  const configured = shapes(opts.temperature);
  // Per-call temperatures (a subagent's) keep their shapes too, a few at most.
  const overridden = new Map<number, ReturnType<typeof shapes>>();
  const shapesFor = (temperature: number | undefined) => {
    if (temperature === undefined || temperature === opts.temperature) return configured;
    if (!overridden.has(temperature) && overridden.size >= 8) overridden.clear();
    return overridden.get(temperature) ?? overridden.set(temperature, shapes(temperature)).get(temperature)!;
  };

  /**
   * One attempt, aborted through `signal` (the attempt's own: the caller's abort, the call's
   * timeout, or a stall of this attempt, which is then retried with a new one).
   */
  async function once(req: ChatRequest, signal: AttemptAbort, call: CallLimits): Promise<ModelResponse> {
    call.attempt = signal;
    call.heardAt = Date.now();
    call.idleMs = idleTimeoutMs;
    watchdog.watch(call);
    http ??= createChatHttp(resolved);
    const fields = shapesFor(req.temperature);
    const payload = encodeRequest(req.tools.length ? fields.withTools : fields.withoutTools, req.messages, req.tools);
    const reply = createReplyAccumulator(maxReplyChars);
    try {
      if (!stream) {
        const raw = await http.complete(payload, signal, call.heard);
        reply.completion(raw);
        const response = reply.finish();
        if (response.content) req.onDelta?.(response.content);
        return warnDropped(response, reply.droppedCalls);
      }
      const visible = createThinkFilter();
      for await (const chunk of http.stream(payload, signal, call.heard)) {
        const added = reply.chunk(chunk);
        const text = added && visible.push(added);
        if (text) req.onDelta?.(text);
      }
      call.idleMs = Infinity;
      // A cut-off reply must never pass for a whole one.
      if (signal.aborted) throw signal.reason;
      // What the filter held back (a tag that turned out to be prose, a trailing partial tag) is decided now.
      const rest = visible.flush();
      if (rest) req.onDelta?.(rest);
      return warnDropped(reply.finish(), reply.droppedCalls);
    } catch (err) {
      throw signal.aborted ? signal.reason : err;
    } finally {
      call.idleMs = Infinity;
      call.attempt = undefined;
    }
  }

  function warnDropped(response: ModelResponse, dropped: number): ModelResponse {
    if (dropped) opts.logger?.warn({ provider: resolved.spec.name, dropped, kept: MAX_TOOL_CALLS }, "model asked for too many tool calls at once; the rest were dropped");
    return response;
  }

  function failure(err: unknown, attempts: number): ModelCallError {
    const why = attempts > 1 ? ` after ${attempts} attempts` : "";
    return new ModelCallError(redact(`model call to ${resolved.spec.name} failed${why}: ${describeModelError(err, resolved)}`), { cause: err });
  }

  /** What aborts the next attempt, following the caller's signal; aborted at once if the call's deadline ran out. */
  function startAttempt(call: CallLimits, parent: AbortSignal | undefined): AttemptAbort {
    const signal = new AttemptAbort(parent);
    call.current = signal;
    if (call.expired) signal.abort(call.expired);
    return signal;
  }

  /** An AbortController for the wait before the next attempt (a sleep takes an AbortSignal), likewise. */
  function startWait(call: CallLimits, parent: AbortSignal | undefined) {
    const link = childController(parent);
    call.current = link.controller;
    if (call.expired && !link.controller.signal.aborted) link.controller.abort(call.expired);
    return link;
  }

  return {
    name: resolved.spec.name,
    model: resolved.model,
    async chat(req) {
      // One abort per attempt (and an AbortController per wait between attempts), following the
      // caller's signal; the call's own limits abort whichever is current.
      const call = new CallLimits(errors);
      // Standard: the timeout bounds the whole call, retries included. Persistent: it bounds each attempt, and a timed-out attempt is retried.
      if (!persistent) call.deadline = Date.now() + timeoutMs;
      watchdog.watch(call);
      try {
        for (let attempt = 0; ; attempt++) {
          const signal = startAttempt(call, req.signal);
          if (persistent) {
            call.deadline = Date.now() + timeoutMs;
            watchdog.watch(call);
          }
          try {
            const response = await once(req, signal, call);
            response.model = answeredBy;
            return response;
          } catch (err) {
            // Retrying without a bound, the attempt's deadline ends with it (the wait is not bounded).
            if (persistent) call.deadline = Infinity;
            if (req.signal?.aborted) throw err;
            if (!isRetryable(err) || (!persistent && attempt >= backoff.maxRetries)) throw failure(err, attempt + 1);
            const delay = persistent ? Math.min(backoffDelay({ ...backoff, maxDelayMs: PERSISTENT_MAX_DELAY_MS }, Math.min(attempt, 16), err, now()), PERSISTENT_MAX_DELAY_MS) : backoffDelay(backoff, attempt, err, now());
            opts.logger?.warn({ provider: resolved.spec.name, attempt: attempt + 1, delayMs: Math.round(delay), err: (err as Error).message }, "model call failed, retrying");
            const status = (err as { status?: unknown }).status;
            req.onRetry?.({ attempt: attempt + 1, delayMs: Math.round(delay), status: typeof status === "number" ? status : null, error: redact((err as Error).message ?? String(err)) });
            const wait = startWait(call, req.signal);
            try {
              await sleep(delay, wait.controller.signal);
            } catch (slept) {
              if (req.signal?.aborted) throw slept;
              throw failure(wait.controller.signal.reason ?? slept, attempt + 1);
            } finally {
              wait.dispose();
            }
          } finally {
            signal.dispose();
          }
        }
      } finally {
        watchdog.unwatch(call);
        call.current = undefined;
      }
    },
  };
}
