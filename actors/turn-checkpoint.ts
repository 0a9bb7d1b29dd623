import type { AnyActorRef } from "xstate";
import { blobsWritten } from "../src/store/blobs.js";
import type { CheckpointBarrier } from "../src/store/checkpoint-barrier.js";
import type { StoreOp } from "../src/store/store.js";
import { checkpointOps, closeTurnOp, openTurnOp, pruneFinishedOps, TURN_FORMAT, type TurnRecord } from "../src/store/turns.js";
import { stateJournalOp, toolCallKey, toolJournalOp, type ToolJournalRecord } from "../src/store/turn-journal.js";
import { persistTurnSnapshot, type LiveTurnSnapshot } from "../src/store/turn-snapshot.js";
import { turnSummaryOps } from "../src/store/turn-summaries.js";
import type { TurnInput, TurnOutput, TurnSnapshot, TurnStart } from "../machines/turn.machine.js";
import { startedWithCheckpoint } from "./run-tools.js";
import type { FinalOps, TurnDeps, TurnFinalState, TurnResult } from "./turn.js";

/**
 * States whose checkpoint shares the next one's synced batch: no effect starts from them (they wait
 * for the `checkpointed` event this runtime sends), so nothing can run ahead of what that batch makes durable.
 */
export const CARRIED_STATES: ReadonlySet<string> = new Set(["tools_completed"]);

/** A turn's settlement and its checkpoint chain, kept by the runtime while the turn runs. */
export interface Entry {
  promise: Promise<TurnResult>;
  resolve(result: TurnResult): void;
  reject(err: unknown): void;
  chain: Promise<void>;
  onFinal?: FinalOps;
  live: boolean;
}

/**
 * What a turn runtime shares with the checkpointing of each of its turns: made once per runtime
 * (createTurnRuntime, where each is described), read into locals once per turn.
 */
export interface CheckpointScope {
  deps: TurnDeps;
  now: () => number;
  barrier: CheckpointBarrier;
  fresh: Set<string>;
  prestarted: Map<string, ToolJournalRecord>;
  forgetStarted: (turnId: string) => void;
  journalWrites: Map<string, Array<Promise<void>>>;
  entries: Map<string, Entry>;
  entryOf: (turnId: string) => Entry;
  defaultFinal: FinalOps;
}

/**
 * Every snapshot of a turn actor is checkpointed in one synced batch (snapshot plus journal record)
 * before the effect that follows it may start (the checkpoint barrier). The final checkpoint carries
 * the final ops in the same atomic batch. A failed write is decided here, once: the turn's later
 * snapshots are not written, settled() rejects, and the turn stays open at its last durable checkpoint.
 * Called once per turn actor, before it starts (the runtime's `logic.start`).
 */
export function attachCheckpoints(scope: CheckpointScope, actor: AnyActorRef, start: TurnStart) {
  const { deps, now, barrier, fresh, prestarted, forgetStarted, journalWrites, entries, entryOf, defaultFinal } = scope;
  const resumed = "record" in start ? start.record : undefined;
  const input = resumed ? resumed.input : (start as { input: TurnInput }).input;
  if (!input) throw new Error(`turn ${resumed?.turnId}: its stored input is missing, so it cannot be resumed`);
  const turnId = input.turnId;
  const entry = entryOf(turnId);
  entry.live = true;
  if (resumed) fresh.delete(turnId);
  else fresh.add(turnId);
  const createdAt = resumed?.createdAt ?? now();
  const resumes = (resumed?.resumes ?? 0) + (resumed ? 1 : 0);
  let pendingInitial = resumed ? [] : [...((start as { initialOps?: StoreOp[] }).initialOps ?? []), openTurnOp(turnId, input.sessionKey)];
  let inputStored = Boolean(resumed);
  /** The seq of the awaiting_tools checkpoint that last carried tool.started records. */
  let startedAtSeq = -1;
  /** Journal entries of checkpoints that share the next one's batch (see `shared`). */
  let carried: StoreOp[] = [];
  let failed = false;
  // Messages of the context already in a queued or written checkpoint: each is stored once. A turn
  // resumed from an older format has its own messages only in its snapshot, so they are written again.
  const inputCount = input.messages.length;
  let messagesQueued = resumed?.messageCount ?? inputCount;
  const startedAt = now();
  deps.logger?.info({ sessionKey: input.sessionKey, turnId, channel: input.channel, ...(resumed ? { resumedFrom: resumed.state, resumes } : {}) }, resumed ? "turn resumed" : "turn started");

  const fail = (err: unknown) => {
    if (failed) return;
    failed = true;
    deps.logger?.error({ turnId, err }, "turn checkpoint failed; the turn stays at its last durable checkpoint");
    barrier.forget(turnId);
    fresh.delete(turnId);
    forgetStarted(turnId);
    journalWrites.delete(turnId);
    entry.reject(err);
    // The turn resumes as a new actor, with an entry of its own.
    if (entries.get(turnId) === entry) entries.delete(turnId);
  };

  /** A state that waits on its checkpoint (tools_completed) is told it may go on. */
  const proceed = (state: string) => {
    if (CARRIED_STATES.has(state) && actor.getSnapshot().status === "active") actor.send({ type: "checkpointed" });
  };

  const checkpoint = (snap: TurnSnapshot) => {
    if (failed) return;
    const final = snap.status === "done";
    const messages = snap.context.messages;
    const state = String(snap.value);
    // A checkpoint that no effect waits on (tools_completed: its results are journalled, the next
    // model call waits for its own checkpoint) shares the next one's batch: its journal entry is
    // carried there, its record is superseded by that one's. A kill between the two resumes from
    // the checkpoint before (awaiting_tools), whose tool results the journal holds.
    if (!final && CARRIED_STATES.has(state) && pendingInitial.length === 0) {
      const at = now();
      deps.bus?.publish({ type: "turn_state", sessionKey: input.sessionKey, turnId, state, iteration: snap.context.iteration, at });
      const journalOp = stateJournalOp(turnId, { seq: snap.context.seq, state, iteration: snap.context.iteration, at, tokens: snap.context.usage.totalTokens });
      const seq = snap.context.seq;
      entry.chain = entry.chain.then(() => {
        if (failed) return;
        if (deps.durable !== false) carried.push(journalOp);
        // Only the checkpointed wait follows; the next effect waits for the batch that carries this.
        barrier.mark(turnId, seq);
        proceed(state);
      });
      return;
    }
    // Without durability only the final batch is written: a transition before it makes no record.
    // What the first batch adds besides its checkpoint (the user's message in the session, the
    // open-turn index) is still written, unsynced, at the first transition: the final batch's ops
    // are made from it (the session's next seq), as with checkpoints on. (Carried in the final
    // batch instead, they were made without it: the user's message overwritten, no history for
    // the next turn.)
    if (deps.durable === false && !final) {
      const at = now();
      deps.bus?.publish({ type: "turn_state", sessionKey: input.sessionKey, turnId, state, iteration: snap.context.iteration, at });
      const initial = pendingInitial;
      pendingInitial = [];
      const seq = snap.context.seq;
      entry.chain = entry.chain
        .then(async () => {
          if (failed) return;
          if (initial.length) await deps.store.batch(initial, { sync: false });
          barrier.mark(turnId, seq);
          proceed(state);
        })
        .catch(fail);
      return;
    }
    const record: TurnRecord = {
      format: TURN_FORMAT,
      turnId,
      sessionKey: input.sessionKey,
      state: String(snap.value),
      final,
      seq: snap.context.seq,
      // What XState's getPersistedSnapshot then packSnapshot would store, in one pass (turn-snapshot.ts).
      snapshot: persistTurnSnapshot(snap as unknown as LiveTurnSnapshot),
      input,
      createdAt,
      updatedAt: now(),
      resumes,
      messageCount: messages.length,
    };
    const initial = pendingInitial;
    pendingInitial = [];
    const newMessages = { from: messagesQueued, messages: messages.slice(messagesQueued) };
    const written = messagesQueued;
    messagesQueued = messages.length;
    const result: TurnResult | undefined = final ? { turnId, state: record.state as TurnFinalState, output: snap.output as TurnOutput } : undefined;
    deps.bus?.publish({ type: "turn_state", sessionKey: input.sessionKey, turnId, state: record.state, iteration: snap.context.iteration, at: record.updatedAt });
    entry.chain = entry.chain
      .then(async () => {
        // Nothing queued behind a failed write commits.
        if (failed) return;
        const withInput = !inputStored;
        // A finished turn's input and messages are pruned in its final batch (the session holds them now).
        const extra = result
          ? [
              ...(await (entry.onFinal ?? defaultFinal)(result, input)),
              closeTurnOp(turnId, input.sessionKey),
              // The final answer may fold a cut-off chain into one message: every key written goes
              // (those the earlier checkpoints wrote; the final one writes none).
              ...pruneFinishedOps(turnId, { from: inputCount, to: written }, !withInput),
            ]
          : [];
        const ops = checkpointOps(record, snap.context.iteration, { withInput: withInput && !result, newMessages: result ? undefined : newMessages });
        // A turn started here (never restored: its journal holds no record of these calls to
        // overwrite): the first calls' tool.started share this batch, so the tools start once it is
        // durable without a synced write of their own. Not with hooks loaded: beforeExecuteTools
        // runs between the checkpoint and the calls.
        const started =
          record.state === "awaiting_tools" && record.seq > startedAtSeq && fresh.has(turnId) && (deps.hooks?.size ?? 0) === 0
            ? startedWithCheckpoint(turnId, snap.context.iteration, snap.context.pendingToolCalls, deps.registry, record.updatedAt)
            : [];
        ops.push(...started.map(toolJournalOp));
        // Once per awaiting_tools: a later checkpoint of the same state (an injected message) must
        // not write them again over a call that completed meanwhile.
        if (started.length) startedAtSeq = record.seq;
        // Journal writes handed in before this checkpoint (tool.completed) land before it.
        const journal = journalWrites.get(turnId);
        if (journal) {
          journalWrites.delete(turnId);
          await Promise.all(journal);
        }
        const earlier = carried;
        carried = [];
        await deps.store.batch([...initial, ...earlier, ...ops, ...turnSummaryOps(record, { first: withInput }), ...extra], { sync: true });
        // The prompt's chunks it carried are stored: the next turns do not read them back.
        if (initial.length) blobsWritten(deps.store, initial);
        if (withInput) inputStored = true;
        for (const r of started) prestarted.set(`${turnId}|${toolCallKey(r.iteration!, r.index!)}`, r);
        barrier.mark(turnId, record.seq);
        proceed(record.state);
        if (result) {
          const { usage, iteration, error } = result.output;
          deps.logger?.info(
            { sessionKey: input.sessionKey, turnId, state: result.state, iterations: iteration, tokens: usage.totalTokens, durationMs: now() - startedAt, ...(error ? { error } : {}) },
            "turn finished",
          );
          barrier.forget(turnId);
          entry.resolve(result);
        }
      })
      .catch(fail);
  };

  actor.subscribe({
    next: (snap: TurnSnapshot) => {
      if (snap.status === "active" || snap.status === "done") checkpoint(snap);
    },
    error: fail,
    complete: () => {
      entry.live = false;
      fresh.delete(turnId);
      forgetStarted(turnId);
      void entry.chain.then(() => {
        if (entries.get(turnId) === entry && !entry.live) entries.delete(turnId);
        if (!entry.live) journalWrites.delete(turnId);
      });
    },
  });
}
