import type { Logger } from "pino";
import type { ChatMessage, ModelResponse, ParsedToolCall } from "../providers/messages.js";

/**
 * nanobot's AgentHook (nanobot/agent/hook.py): points in the agent loop where user code can watch a
 * turn, and one (finalizeContent) where it can change the reply. Every method is optional and may be
 * async. The contexts are read-only views: the turn's state lives in its checkpoints, so a hook that
 * edited `messages` would change nothing; finalizeContent's return value is the only way to change
 * what the turn says.
 */

/** Which turn a hook is called for. */
export interface HookTurn {
  turnId: string;
  sessionKey: string;
  channel: string;
  chatId: string;
  /** The model call's place in the turn (0 for the first; one more after each round of tool calls). */
  iteration: number;
}

export interface BeforeIterationContext extends HookTurn {
  /** What the turn holds before this model call (system prompt, history, user message, tool rounds so far). */
  messages: readonly ChatMessage[];
}

export interface StreamContext extends HookTurn {
  /** The response, once the model call has ended (onStreamEnd). */
  response?: ModelResponse;
}

export interface BeforeExecuteToolsContext extends HookTurn {
  toolCalls: readonly ParsedToolCall[];
}

export interface AfterIterationContext extends HookTurn {
  /** "tool_calls": tools ran and the loop goes on; "completed": this was the final answer. */
  stopReason: "tool_calls" | "completed";
  toolCalls: readonly ParsedToolCall[];
  /** The tools' results (tool_calls). */
  toolResults?: readonly string[];
  /** The reply after finalizeContent (completed). */
  finalContent?: string;
}

export interface FinalizeContext extends HookTurn {
  /** The model's final response (its content as the model wrote it). */
  response: ModelResponse;
  messages: readonly ChatMessage[];
}

export interface AgentHook {
  /** Shown in logs (default: the module it came from). */
  name?: string;
  beforeIteration?(ctx: BeforeIterationContext): void | Promise<void>;
  /** A piece of streamed reply text, in order. */
  onStream?(ctx: StreamContext, delta: string): void | Promise<void>;
  /** The model call ended; `resuming` is true when tool calls follow (the reply goes on after them). */
  onStreamEnd?(ctx: StreamContext, opts: { resuming: boolean }): void | Promise<void>;
  beforeExecuteTools?(ctx: BeforeExecuteToolsContext): void | Promise<void>;
  afterIteration?(ctx: AfterIterationContext): void | Promise<void>;
  /** Returns the reply to send and store instead of `content`; runs once per final answer, before the turn's final checkpoint. */
  finalizeContent?(ctx: FinalizeContext, content: string): string | Promise<string>;
}

type ObserverPoint = "beforeIteration" | "onStream" | "onStreamEnd" | "beforeExecuteTools" | "afterIteration";
export const HOOK_POINTS = ["beforeIteration", "onStream", "onStreamEnd", "beforeExecuteTools", "afterIteration", "finalizeContent"] as const;

/** The hooks of a turn as one: each point calls every hook in order; a hook that throws is logged and skipped. */
export interface HookChain {
  readonly size: number;
  /** Whether any hook has this point (so a turn can skip work no hook wants). */
  has(point: (typeof HOOK_POINTS)[number]): boolean;
  beforeIteration(ctx: BeforeIterationContext): Promise<void>;
  onStream(ctx: StreamContext, delta: string): Promise<void>;
  onStreamEnd(ctx: StreamContext, opts: { resuming: boolean }): Promise<void>;
  beforeExecuteTools(ctx: BeforeExecuteToolsContext): Promise<void>;
  afterIteration(ctx: AfterIterationContext): Promise<void>;
  /** A pipeline: each hook gets the previous one's content. A hook that throws or returns a non-string leaves the content as it was. */
  finalizeContent(ctx: FinalizeContext, content: string): Promise<string>;
}

const nameOf = (hook: AgentHook, index: number) => hook.name ?? `hook #${index + 1}`;

export function composeHooks(hooks: readonly AgentHook[], logger?: Pick<Logger, "error">): HookChain {
  const list = [...hooks];
  const failed = (hook: AgentHook, index: number, point: string, ctx: HookTurn, err: unknown) =>
    logger?.error({ hook: nameOf(hook, index), point, sessionKey: ctx.sessionKey, turnId: ctx.turnId, err }, `hook ${nameOf(hook, index)} failed in ${point}; skipped`);

  const each =
    <C extends HookTurn, A extends unknown[]>(point: ObserverPoint) =>
    async (ctx: C, ...args: A): Promise<void> => {
      for (const [index, hook] of list.entries()) {
        const fn = hook[point] as ((ctx: C, ...args: A) => void | Promise<void>) | undefined;
        if (!fn) continue;
        try {
          await fn.call(hook, ctx, ...args);
        } catch (err) {
          failed(hook, index, point, ctx, err);
        }
      }
    };

  return {
    size: list.length,
    has: (point) => list.some((h) => typeof h[point] === "function"),
    beforeIteration: each<BeforeIterationContext, []>("beforeIteration"),
    onStream: each<StreamContext, [string]>("onStream"),
    onStreamEnd: each<StreamContext, [{ resuming: boolean }]>("onStreamEnd"),
    beforeExecuteTools: each<BeforeExecuteToolsContext, []>("beforeExecuteTools"),
    afterIteration: each<AfterIterationContext, []>("afterIteration"),
    async finalizeContent(ctx, content) {
      for (const [index, hook] of list.entries()) {
        if (!hook.finalizeContent) continue;
        try {
          const next: unknown = await hook.finalizeContent(ctx, content);
          if (typeof next === "string") content = next;
          else failed(hook, index, "finalizeContent", ctx, new TypeError(`finalizeContent returned ${next === null ? "null" : typeof next}, not a string; the content is kept as it was`));
        } catch (err) {
          failed(hook, index, "finalizeContent", ctx, err);
        }
      }
      return content;
    },
  };
}

export const NO_HOOKS: HookChain = composeHooks([]);
