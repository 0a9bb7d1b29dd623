import { fromPromise } from "xstate";
import type { Bus } from "../src/bus/index.js";
import { fault } from "../src/fault.js";
import type { LlmProvider, ToolSchema } from "../src/providers/client.js";
import type { ModelResponse } from "../src/providers/messages.js";
import type { CheckpointBarrier } from "../src/store/checkpoint-barrier.js";
import type { CallModelInput } from "../machines/turn.machine.js";

export interface CallModelDeps {
  provider: LlmProvider;
  tools: () => ToolSchema[];
  barrier: CheckpointBarrier;
  bus?: Bus;
  now?: () => number;
  /** What the model is sent, derived from the checkpointed messages (microcompact). */
  compact?: (messages: ModelMessages) => ModelMessages;
}

type ModelMessages = CallModelInput["messages"];

/** One model call; streamed text goes out on the bus as progress events. No side effects. */
export function createCallModel(deps: CallModelDeps) {
  const now = deps.now ?? Date.now;
  return fromPromise<ModelResponse, CallModelInput>(async ({ input, signal }) => {
    await deps.barrier.reached(input.turnId, input.seq, signal);
    fault("awaiting-model");
    return deps.provider.chat({
      messages: deps.compact ? deps.compact(input.messages) : input.messages,
      tools: deps.tools(),
      signal,
      onDelta: (delta) =>
        deps.bus?.publish({ type: "progress", sessionKey: input.sessionKey, turnId: input.turnId, delta, at: now() }),
      onRetry: ({ attempt, delayMs, status }) =>
        deps.bus?.publish({ type: "model_retry", sessionKey: input.sessionKey, turnId: input.turnId, attempt, delayMs, status, at: now() }),
      onFallback: ({ from, to, error }) =>
        deps.bus?.publish({ type: "model_fallback", sessionKey: input.sessionKey, turnId: input.turnId, from, to, error, at: now() }),
    });
  });
}
