import { fromPromise } from "xstate";
import type { Logger } from "pino";
import { fault } from "../src/fault.js";
import type { HookChain } from "../src/hooks/hook.js";
import type { CheckpointBarrier } from "../src/store/checkpoint-barrier.js";
import type { Store } from "../src/store/store.js";
import { finalizeJournal, finalizeJournalOp } from "../src/store/turn-journal.js";
import type { FinalizeInput } from "../machines/turn.machine.js";

export interface FinalizeDeps {
  hooks: HookChain;
  store: Store;
  barrier: CheckpointBarrier;
  logger?: Logger;
  now?: () => number;
}

/**
 * The hooks' finalizeContent on a turn's final answer, then their afterIteration. The answer was
 * checkpointed (state `finalizing_content`) before this starts; the run is journalled like a tool call:
 * `started` (synced) before the hooks run, `completed` with their content after. A resumed turn
 * reuses a completed result, and never runs the hooks again on content they may already have seen
 * (interrupted while they ran: the model's answer is kept as it was). The final checkpoint follows.
 */
export function createFinalize(deps: FinalizeDeps) {
  const now = deps.now ?? Date.now;
  return fromPromise<string, FinalizeInput>(async ({ input, signal }) => {
    await deps.barrier.reached(input.turnId, input.seq, signal);
    const { turnId, sessionKey, channel, chatId, iteration, seq, response, messages } = input;
    const previous = await finalizeJournal(deps.store, turnId, seq);
    if (previous?.status === "completed" && previous.content !== undefined) return previous.content;
    if (previous?.status === "started") {
      deps.logger?.warn({ sessionKey, turnId }, "troupe stopped while the hooks finalised this reply; it is sent as the model wrote it, so no hook runs twice on it");
      await deps.store.batch([finalizeJournalOp({ ...previous, status: "completed", content: response.content, at: now() })], { sync: true });
      return response.content;
    }
    const turn = { turnId, sessionKey, channel, chatId, iteration };
    fault("finalize-before-hooks");
    await deps.store.batch([finalizeJournalOp({ kind: "finalize", turnId, seq, status: "started", at: now() })], { sync: true });
    const content = deps.hooks.has("finalizeContent") ? await deps.hooks.finalizeContent({ ...turn, response, messages }, response.content) : response.content;
    fault("finalize-during-hooks");
    await deps.store.batch([finalizeJournalOp({ kind: "finalize", turnId, seq, status: "completed", content, at: now() })], { sync: true });
    fault("finalize-after-hooks");
    await deps.hooks.afterIteration({ ...turn, stopReason: "completed", toolCalls: [], finalContent: content });
    return content;
  });
}
