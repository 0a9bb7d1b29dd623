import { fromPromise } from "xstate";
import type { Logger } from "pino";
import type { Bus } from "../src/bus/index.js";
import { fault } from "../src/fault.js";
import type { ParsedToolCall } from "../src/providers/messages.js";
import type { CheckpointBarrier } from "../src/store/checkpoint-barrier.js";
import type { Store } from "../src/store/store.js";
import { toolCallKey, toolJournal, toolJournalOp, type ToolJournalRecord } from "../src/store/turn-journal.js";
import { formatToolHint, formatToolHints } from "../src/tools/hints.js";
import type { ToolRegistry } from "../src/tools/registry.js";
import { REPEATED_LOOKUP_NOTE, repeatedLookups } from "../src/tools/repeated-lookup.js";
import { NO_HOOKS, type HookChain } from "../src/hooks/hook.js";
import type { RunToolsInput, ToolResultMessage } from "../machines/turn.machine.js";

export interface RunToolsDeps {
  registry: ToolRegistry;
  store: Store;
  barrier: CheckpointBarrier;
  workspace: string;
  bus?: Bus;
  logger?: Logger;
  now?: () => number;
  /** How long a tool hint may grow (agents.defaults.toolHintMaxLength, nanobot's 40 by default). */
  hintMaxLength?: number;
  /** beforeExecuteTools before the batch, afterIteration with its results. */
  hooks?: HookChain;
  /**
   * Whether the turn was started in this process from its input and never restored: then its
   * journal holds nothing before its first tool calls run, and is not read for them.
   */
  fresh?: (turnId: string) => boolean;
  /**
   * The `tool.started` record of a call that the turn's awaiting_tools checkpoint already wrote (in
   * its synced batch), taken once: the call then runs without writing it again.
   */
  takeStarted?: (turnId: string, key: string) => ToolJournalRecord | undefined;
  /**
   * Takes a call's `tool.completed` write (the turn runtime): the turn's next checkpoint is written
   * after it and fails with it, so the results go on without waiting for it. Without it the write
   * is awaited here.
   */
  journalled?: (turnId: string, write: Promise<void>) => void;
}

/** The `tool.started` records an awaiting_tools checkpoint may carry: its first batch of calls (they start together). */
export function startedWithCheckpoint(turnId: string, iteration: number, calls: ParsedToolCall[], registry: ToolRegistry, at: number): ToolJournalRecord[] {
  const first = planBatches(calls, registry)[0] ?? [];
  return first.map((call) => ({ kind: "tool", turnId, callId: call.id, iteration, index: calls.indexOf(call), name: call.name, args: call.arguments, status: "started", at }));
}

export const INTERRUPTED_RESULT =
  "Error: this call was interrupted before it completed (troupe stopped while it ran), so its effect is unknown. " +
  "Check the current state before deciding whether to run it again.";

/** Consecutive read-only, non-exclusive calls run together; every other call runs alone. */
export function planBatches(calls: ParsedToolCall[], registry: ToolRegistry): ParsedToolCall[][] {
  const batches: ParsedToolCall[][] = [];
  let parallel: ParsedToolCall[] = [];
  for (const call of calls) {
    const tool = registry.get(call.name);
    if (tool?.readOnly && !tool.exclusive) {
      parallel.push(call);
      continue;
    }
    if (parallel.length) batches.push(parallel);
    parallel = [];
    batches.push([call]);
  }
  if (parallel.length) batches.push(parallel);
  return batches;
}

const hintCall = (call: ParsedToolCall) => ({ name: call.name, arguments: call.arguments ?? call.rawArguments });

/**
 * Runs one response's tool calls. The journal decides: a completed call's result is reused; a call
 * started but not completed (the daemon died) is re-run only if its tool is read-only or
 * idempotent, otherwise the model is told its effect is unknown. Never a silent repeat.
 */
export function createRunTools(deps: RunToolsDeps) {
  const now = deps.now ?? Date.now;
  return fromPromise<ToolResultMessage[], RunToolsInput>(async ({ input, signal }) => {
    await deps.barrier.reached(input.turnId, input.seq, signal);
    const journal = input.iteration === 1 && deps.fresh?.(input.turnId) ? new Map<string, ToolJournalRecord>() : await toolJournal(deps.store, input.turnId);
    const hooks = deps.hooks ?? NO_HOOKS;
    const turn = { turnId: input.turnId, sessionKey: input.sessionKey, channel: input.channel, chatId: input.chatId, iteration: input.iteration - 1 };
    if (hooks.size) await hooks.beforeExecuteTools({ ...turn, toolCalls: input.calls });
    // Calls are keyed by their place in the turn: the model's ids may be missing or repeated.
    const results = new Map<number, string>();
    const indexOf = new Map(input.calls.map((call, index) => [call, index]));
    // The same URL fetched (or query searched) a third time in the turn gets a note, not a request.
    const earlier = [...journal.values()].filter((r) => r.iteration !== undefined && r.iteration < input.iteration);
    const blocked = repeatedLookups(earlier, input.calls);

    async function runOne(call: ParsedToolCall): Promise<void> {
      const index = indexOf.get(call)!;
      const key = toolCallKey(input.iteration, index);
      // A format-1 entry (by call id) only exists for a turn interrupted before the upgrade.
      const previous = journal.get(key) ?? journal.get(`id:${call.id}`);
      if (previous?.status === "completed" && previous.result !== undefined) {
        results.set(index, previous.result);
        return;
      }
      if (blocked.has(index)) {
        results.set(index, REPEATED_LOOKUP_NOTE);
        const at = now();
        await deps.store.batch(
          [toolJournalOp({ kind: "tool", turnId: input.turnId, callId: call.id, iteration: input.iteration, index, name: call.name, args: call.arguments, status: "completed", result: REPEATED_LOOKUP_NOTE, at, startedAt: at })],
          { sync: true },
        );
        return;
      }
      const tool = deps.registry.get(call.name);
      const prestarted = deps.takeStarted?.(input.turnId, key);
      if (previous?.status === "started" && !prestarted && !(tool?.readOnly || tool?.idempotent)) {
        results.set(index, INTERRUPTED_RESULT);
        await deps.store.batch([toolJournalOp({ ...previous, status: "completed", result: INTERRUPTED_RESULT, at: now() })], { sync: true });
        return;
      }
      const started: ToolJournalRecord = prestarted ?? {
        kind: "tool",
        turnId: input.turnId,
        callId: call.id,
        iteration: input.iteration,
        index,
        name: call.name,
        args: call.arguments,
        status: "started",
        at: now(),
      };
      // Written before the call runs: here, or already with the awaiting_tools checkpoint. The started
      // record is what keeps a call from running twice after a crash; a read-only or idempotent call
      // is run again anyway, so its record is written without waiting for the disk.
      if (!prestarted) await deps.store.batch([toolJournalOp(started)], { sync: !(tool?.readOnly || tool?.idempotent) });
      fault("after-tool-started");
      const result = await deps.registry.execute(
        call.name,
        call.arguments,
        {
          workspace: deps.workspace,
          sessionKey: input.sessionKey,
          turnId: input.turnId,
          callId: call.id,
          idempotencyKey: `${input.sessionKey}:${input.turnId}:${key}`,
          signal,
          channel: input.channel,
          chatId: input.chatId,
        },
        call.argumentsError,
      );
      const completedAt = now();
      // Not synced on its own: LevelDB's log keeps writes in order, so the next checkpoint's synced
      // batch (which the next model call's answer waits for) makes it durable too; a kill -9 in
      // between loses nothing written (the OS has it), and a power cut leaves the call started, as if
      // it had been cut. Nor waited for when the turn runtime takes it: that checkpoint is written
      // after it, while the results go on to the next model call (a kill before it is written is a
      // kill while the tool ran).
      const written = deps.store.batch([toolJournalOp({ ...started, status: "completed", result, at: completedAt, startedAt: started.at })], { sync: false });
      // A short hint of the arguments only (the logger redacts secrets in it); never the arguments.
      deps.logger?.info(
        { sessionKey: input.sessionKey, turnId: input.turnId, tool: call.name, hint: formatToolHint(hintCall(call), deps.hintMaxLength), durationMs: completedAt - started.at, outcome: result.startsWith("Error") ? "error" : "ok" },
        "tool call",
      );
      results.set(index, result);
      if (!deps.journalled) {
        await written;
        fault("after-tool-completed");
        return;
      }
      deps.journalled(input.turnId, written);
      // Before the runtime's next checkpoint (queued later on the same write): as when it was awaited here.
      written.then(() => fault("after-tool-completed"), () => undefined);
    }

    // One hint for the response's calls still to run, as nanobot shows it: "read a.ts, $ npm test".
    const toRun = input.calls.filter((call, index) => journal.get(toolCallKey(input.iteration, index))?.status !== "completed");
    if (toRun.length) {
      deps.bus?.publish({
        type: "tool_hint",
        sessionKey: input.sessionKey,
        turnId: input.turnId,
        tool: [...new Set(toRun.map((call) => call.name))].join(", "),
        hint: formatToolHints(toRun.map(hintCall), deps.hintMaxLength),
        at: now(),
      });
    }
    for (const batch of planBatches(input.calls, deps.registry)) {
      await Promise.all(batch.map(runOne));
    }
    const messages = input.calls.map((call, index) => ({ role: "tool" as const, tool_call_id: call.id, name: call.name, content: results.get(index) ?? "" }));
    if (hooks.size) await hooks.afterIteration({ ...turn, stopReason: "tool_calls", toolCalls: input.calls, toolResults: messages.map((m) => m.content) });
    return messages;
  });
}
