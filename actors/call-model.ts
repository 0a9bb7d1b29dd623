import { fromPromise } from "xstate";
import type { Bus } from "../src/bus/index.js";
import { fault } from "../src/fault.js";
import type { LlmProvider, ToolSchema } from "../src/providers/client.js";
import type { ModelResponse } from "../src/providers/messages.js";
import type { CheckpointBarrier } from "../src/store/checkpoint-barrier.js";
import { chatWithImageFallback } from "../src/tools/tool-images.js";
import type { CallModelInput } from "../machines/turn.machine.js";

export interface CallModelDeps {
  provider: LlmProvider;
  tools: () => ToolSchema[];
  barrier: CheckpointBarrier;
  bus?: Bus;
  now?: () => number;
  /** What the model is sent, derived from the checkpointed messages (microcompact). */
  compact?: (messages: ModelMessages) => ModelMessages;
  /** Then what is read for the request alone: images that tool results name (src/tools/tool-images.ts). */
  attach?: (messages: ModelMessages) => Promise<ModelMessages>;
}

type ModelMessages = CallModelInput["messages"];

/** One model call; streamed text goes out on the bus as progress events. No side effects. */
export function createCallModel(deps: CallModelDeps) {
  const now = deps.now ?? Date.now;
  return fromPromise<ModelResponse, CallModelInput>(async ({ input, signal }) => {
    await deps.barrier.reached(input.turnId, input.seq, signal);
    fault("awaiting-model");
    const compacted = deps.compact ? deps.compact(input.messages) : input.messages;
    const messages = deps.attach ? await deps.attach(compacted) : compacted;
    const chat = (messages: ModelMessages) =>
      deps.provider.chat({
        messages,
        tools: deps.tools(),
        signal,
        onDelta: (delta) =>
          deps.bus?.publish({ type: "progress", sessionKey: input.sessionKey, turnId: input.turnId, delta, at: now() }),
        onRetry: ({ attempt, delayMs, status }) =>
          deps.bus?.publish({ type: "model_retry", sessionKey: input.sessionKey, turnId: input.turnId, attempt, delayMs, status, at: now() }),
      });
    // A model without vision refuses image parts: then once more without them.
    return chatWithImageFallback(chat, messages, signal);
  });
}
