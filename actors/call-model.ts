import { fromPromise } from "xstate";
import type { Bus } from "../src/bus/index.js";
import { fault, faultArmed } from "../src/fault.js";
import type { LlmProvider, ToolSchema } from "../src/providers/client.js";
import type { ModelResponse } from "../src/providers/messages.js";
import type { CheckpointBarrier } from "../src/store/checkpoint-barrier.js";
import { NO_HOOKS, type HookChain } from "../src/hooks/hook.js";
import { chatWithImageFallback } from "../src/tools/tool-images.js";
import type { CallModelInput } from "../machines/turn.machine.js";
import { BUDGET_EXHAUSTED_PROMPT, FINALIZATION_RETRY_PROMPT } from "../src/context/loop-texts.js";

export interface CallModelDeps {
  provider: LlmProvider;
  tools: () => ToolSchema[];
  barrier: CheckpointBarrier;
  bus?: Bus;
  now?: () => number;
  /** What the model is sent, derived from the checkpointed messages (microcompact). */
  compact?: (messages: ModelMessages) => ModelMessages;
  /** Then what is read for the request alone: images that tool results name (src/tools/tool-images.ts). */
  attach?: (messages: ModelMessages, turnMessages?: number) => Promise<ModelMessages>;
  /** beforeIteration before the call, onStream for each piece of text, onStreamEnd after it. */
  hooks?: HookChain;
}

type ModelMessages = CallModelInput["messages"];

/**
 * One model call; streamed text goes out on the bus as progress events (and to the hooks). No side
 * effects. A finalizing call goes without tools and asks for the answer: after repeated empty answers,
 * or once the turn's tool iterations are used up (then for a summary of where the task stands).
 */
export function createCallModel(deps: CallModelDeps) {
  const now = deps.now ?? Date.now;
  const hooks = deps.hooks ?? NO_HOOKS;
  return fromPromise<ModelResponse, CallModelInput>(async ({ input, signal }) => {
    // The checkpoint before the call (its turn's input, or the tool results it answers) is written
    // meanwhile. A model call has no side effect (one interrupted is simply issued again), so without
    // hooks the request goes out at once and the disk's fsync overlaps the model's latency; its
    // answer is taken only once that checkpoint is durable, so nothing that follows from it (a tool
    // call, a reply) can run ahead of it. Hooks may have effects of their own: with them the call
    // starts only once its checkpoint is durable. So does it when the kill tests' fault point
    // awaiting-model is armed: it kills with the checkpoint durable and the call not yet sent.
    const durable = deps.barrier.reached(input.turnId, input.seq, signal);
    const waitFirst = hooks.size > 0 || faultArmed("awaiting-model");
    if (waitFirst) {
      await durable;
      fault("awaiting-model");
    } else durable.catch(() => undefined);
    const prompt = input.finalize === "budget" ? BUDGET_EXHAUSTED_PROMPT : FINALIZATION_RETRY_PROMPT;
    const messages: ModelMessages = input.finalize ? [...input.messages, { role: "user", content: prompt }] : input.messages;
    const turn = { turnId: input.turnId, sessionKey: input.sessionKey, channel: input.channel ?? "", chatId: input.chatId ?? "", iteration: input.iteration ?? 0 };
    if (hooks.size) await hooks.beforeIteration({ ...turn, messages: input.messages });
    // The stream's pieces reach the hooks in order, without holding the stream up.
    let streamed = Promise.resolve();
    const compacted = deps.compact ? deps.compact(messages) : messages;
    // The turn's own messages are the tail (the finalization prompt one more); merges in compaction happen at user messages only.
    const turnMessages = input.turnMessages === undefined ? undefined : input.turnMessages + (input.finalize ? 1 : 0);
    const sent = deps.attach ? await deps.attach(compacted, turnMessages) : compacted;
    const chat = (messages: ModelMessages) =>
      deps.provider.chat({
        messages,
        tools: input.finalize ? [] : deps.tools(),
        signal,
        onDelta: (delta) => {
          deps.bus?.publish({ type: "progress", sessionKey: input.sessionKey, turnId: input.turnId, delta, at: now() });
          if (hooks.size) streamed = streamed.then(() => hooks.onStream(turn, delta));
        },
        onRetry: ({ attempt, delayMs, status }) =>
          deps.bus?.publish({ type: "model_retry", sessionKey: input.sessionKey, turnId: input.turnId, attempt, delayMs, status, at: now() }),
        onFallback: ({ from, to, error }) =>
          deps.bus?.publish({ type: "model_fallback", sessionKey: input.sessionKey, turnId: input.turnId, from, to, error, at: now() }),
      });
    // A model without vision refuses image parts: then once more without them.
    const answer = chatWithImageFallback(chat, sent, signal);
    if (!waitFirst) {
      // Its failure is taken below, once the checkpoint is durable (or the turn stopped).
      answer.catch(() => undefined);
      await durable;
    }
    const response = await answer;
    if (hooks.size) {
      await streamed;
      await hooks.onStreamEnd({ ...turn, response }, { resuming: response.toolCalls.length > 0 });
    }
    // What the model said alongside its tool calls: a channel that does not stream shows it (channels.sendProgress).
    const text = response.content.trim();
    if (response.toolCalls.length && text) deps.bus?.publish({ type: "thought", sessionKey: input.sessionKey, turnId: input.turnId, text, at: now() });
    return response;
  });
}
