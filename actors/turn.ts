import { createActor, type AnyActorRef } from "xstate";
import type { Logger } from "pino";
import type { Bus } from "../src/bus/index.js";
import { turnActorId } from "../src/server/actor-names.js";
import { microcompact } from "../src/context/microcompact.js";
import { fitToBudget } from "../src/memory/fit.js";
import { fixedCost } from "../src/memory/tokens.js";
import { mergeConsecutiveUsers, repairHistory } from "../src/providers/history.js";
import type { LlmProvider } from "../src/providers/client.js";
import { blobsWritten } from "../src/store/blobs.js";
import { createCheckpointBarrier, type CheckpointBarrier } from "../src/store/checkpoint-barrier.js";
import type { Store, StoreOp } from "../src/store/store.js";
import { checkpointOps, closeTurnOp, openTurnOp, pruneFinishedOps, TURN_FORMAT, type TurnRecord } from "../src/store/turns.js";
import { stateJournalOp, toolCallKey, toolJournalOp, type ToolJournalRecord } from "../src/store/turn-journal.js";
import { persistTurnSnapshot, type LiveTurnSnapshot } from "../src/store/turn-snapshot.js";
import { turnSummaryOps } from "../src/store/turn-summaries.js";
import type { ToolRegistry } from "../src/tools/registry.js";
import { attachToolImages } from "../src/tools/tool-images.js";
import {
  turnMachine,
  type InjectedMessage,
  type TurnActorLogic,
  type TurnInput,
  type TurnOutput,
  type TurnSnapshot,
  type TurnStart,
} from "../machines/turn.machine.js";
import { createCallModel } from "./call-model.js";
import { createFinalize } from "./finalize.js";
import { NO_HOOKS, type HookChain } from "../src/hooks/hook.js";
import { createRunTools, startedWithCheckpoint } from "./run-tools.js";

export type { TurnStart } from "../machines/turn.machine.js";

export interface TurnDeps {
  store: Store;
  provider: LlmProvider;
  registry: ToolRegistry;
  workspace: string;
  bus?: Bus;
  logger?: Logger;
  now?: () => number;
  barrier?: CheckpointBarrier;
  /** Tokens a model request may take (window − reply − buffer): every request is fitted to it (src/memory/fit.ts). */
  contextBudget?: number;
  /** Follows a turn started on its own (a subagent) in the actor tree, by its readable id (the actor is not started yet). */
  follow?: (actor: AnyActorRef, id: string) => void;
  /** How long a tool hint may grow (agents.defaults.toolHintMaxLength). */
  toolHintMaxLength?: number;
  /** The hooks (agents.defaults.hooks and the workspace's hooks/), run inside the turn's effects. */
  hooks?: HookChain;
  /** false skips the per-transition checkpoints (only the final batch is written): for measuring their cost, never for use. */
  durable?: boolean;
}

export type TurnFinalState = "responded" | "failed" | "cancelled" | "max_iterations";

export interface TurnResult {
  turnId: string;
  state: TurnFinalState;
  output: TurnOutput;
}

/** Ops that join a turn's final atomic batch (what it added to the session, its reply, the inbox removal). */
export type FinalOps = (result: TurnResult, input: TurnInput) => Promise<StoreOp[]>;

export interface TurnHandle {
  turnId: string;
  done: Promise<TurnResult>;
  cancel(): void;
  inject(content: InjectedMessage["content"], messageId?: string): void;
  /** Stops the turn where it is (shutdown) once its last checkpoint is durable; it resumes from there. */
  stop(): Promise<void>;
}

/**
 * The turn machine with its effects and its checkpointing, as one actor logic: a session invokes
 * it as a child; startTurn runs it on its own (the in-process agent, subagents, tests).
 */
export interface TurnRuntime {
  logic: TurnActorLogic;
  /**
   * Resolves once the turn's final batch is durable. Rejects when one of its checkpoints could not
   * be written: the turn then stays open at its last durable checkpoint and resumes from there.
   */
  settled(turnId: string): Promise<TurnResult>;
  /** Runs a turn as a top-level actor; `onFinal` replaces the runtime's final ops for it. */
  start(start: TurnStart, onFinal?: FinalOps): TurnHandle;
  /** Turns whose actors are running now. */
  running(): string[];
  /** Resolves when no checkpoint write is in flight (before the store closes). */
  drain(): Promise<void>;
}

/**
 * States whose checkpoint shares the next one's synced batch: no effect starts from them (they wait
 * for the `checkpointed` event this runtime sends), so nothing can run ahead of what that batch makes durable.
 */
export const CARRIED_STATES: ReadonlySet<string> = new Set(["tools_completed"]);

/** The turn machine with its effects supplied. */
function effects(
  deps: TurnDeps,
  barrier: CheckpointBarrier,
  fresh: ReadonlySet<string>,
  prestarted: Map<string, ToolJournalRecord>,
  journalled: (turnId: string, write: Promise<void>) => void,
) {
  const hooks = deps.hooks ?? NO_HOOKS;
  return turnMachine.provide({
    guards: { hasHooks: () => hooks.size > 0 },
    actors: {
      callModel: createCallModel({
        hooks,
        provider: deps.provider,
        tools: () => deps.registry.schemas(),
        barrier,
        bus: deps.bus,
        now: deps.now,
        // Whatever was stored, the model gets a well-formed history (no two user messages in a row
        // either); older read-only results are compacted.
        compact: (messages) => {
          const compacted = microcompact(mergeConsecutiveUsers(repairHistory(messages)), (name) => deps.registry.get(name)?.readOnly === true);
          return deps.contextBudget ? fitToBudget(compacted, deps.contextBudget, fixedCost([], deps.registry.schemas())) : compacted;
        },
        attach: (messages, turnMessages) => attachToolImages(messages, (name) => deps.registry.get(name), turnMessages),
      }),
      runTools: createRunTools({ registry: deps.registry, store: deps.store, barrier, workspace: deps.workspace, bus: deps.bus, logger: deps.logger, now: deps.now, hooks, hintMaxLength: deps.toolHintMaxLength, fresh: (turnId) => fresh.has(turnId), journalled,
        takeStarted: (turnId, key) => {
          const record = prestarted.get(`${turnId}|${key}`);
          prestarted.delete(`${turnId}|${key}`);
          return record;
        },
      }),
      finalizeContent: createFinalize({ hooks, store: deps.store, barrier, logger: deps.logger, now: deps.now }),
    },
  });
}

interface Entry {
  promise: Promise<TurnResult>;
  resolve(result: TurnResult): void;
  reject(err: unknown): void;
  chain: Promise<void>;
  onFinal?: FinalOps;
  live: boolean;
}

/**
 * Every snapshot of a turn actor is checkpointed in one synced batch (snapshot plus journal record)
 * before the effect that follows it may start (the checkpoint barrier). The final checkpoint carries
 * the final ops in the same atomic batch. A failed write is decided here, once: the turn's later
 * snapshots are not written, settled() rejects, and the turn stays open at its last durable checkpoint.
 */
export function createTurnRuntime(deps: TurnDeps, defaultFinal: FinalOps = async () => []): TurnRuntime {
  const now = deps.now ?? Date.now;
  const barrier = deps.barrier ?? createCheckpointBarrier();
  /** Turns started here from their input, never restored (their journal is known to be empty at first). */
  const fresh = new Set<string>();
  /** `tool.started` records written with an awaiting_tools checkpoint, by `<turnId>|<call key>`, until their call runs. */
  const prestarted = new Map<string, ToolJournalRecord>();
  const forgetStarted = (turnId: string) => {
    for (const key of prestarted.keys()) if (key.startsWith(`${turnId}|`)) prestarted.delete(key);
  };
  /** Journal writes (`tool.completed`) the turn's next written checkpoint waits for, by turn. */
  const journalWrites = new Map<string, Array<Promise<void>>>();
  const journalled = (turnId: string, write: Promise<void>) => {
    // Awaited by the next checkpoint (whose failure it then is); handled here in case none follows.
    write.catch(() => undefined);
    const list = journalWrites.get(turnId);
    if (list) list.push(write);
    else journalWrites.set(turnId, [write]);
  };
  const base = effects(deps, barrier, fresh, prestarted, journalled);
  // The logic actors run is a copy of the machine with its start hooked (below) as own properties.
  // An object made with Object.create(base) has a hidden class of its own (its prototype is part of
  // it): every runtime's turn logic was a new shape to XState's hot functions (Actor, _process…),
  // whose optimized code deoptimized ("wrong map") and was compiled again for each runtime made in a
  // process (one per subagent run). The same two properties added to a machine give every runtime's
  // logic one shape; its snapshots are still made by `base`, a machine like any other.
  const logic = base.provide({}) as unknown as TurnActorLogic;
  const starts = new WeakMap<AnyActorRef, TurnStart>();
  const entries = new Map<string, Entry>();

  const entryOf = (turnId: string): Entry => {
    let entry = entries.get(turnId);
    if (!entry) {
      let resolve!: Entry["resolve"];
      let reject!: Entry["reject"];
      const promise = new Promise<TurnResult>((res, rej) => ((resolve = res), (reject = rej)));
      promise.catch(() => undefined);
      entry = { promise, resolve, reject, chain: Promise.resolve(), live: false };
      entries.set(turnId, entry);
    }
    return entry;
  };

  function attach(actor: AnyActorRef, start: TurnStart) {
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

  logic.getInitialSnapshot = (scope, start) => {
    starts.set(scope.self, start);
    if (!("record" in start)) return base.getInitialSnapshot(scope as never, start.input);
    const { record } = start;
    barrier.mark(record.turnId, record.seq);
    // Messages injected but not yet taken are still in the inbox; the session queues them again.
    // Records from before empty-answer retries and continuations have neither count: none happened yet.
    const { emptyAnswers = 0, continuation = [] } = record.snapshot.context as { emptyAnswers?: number; continuation?: string[] };
    const snapshot = { ...record.snapshot, context: { ...record.snapshot.context, injected: [], emptyAnswers, continuation } };
    return base.restoreSnapshot(snapshot as never, scope as never) as TurnSnapshot;
  };
  logic.start = (snapshot, scope) => {
    const start = starts.get(scope.self);
    if (start) attach(scope.self, start);
    base.start(snapshot as never);
  };

  return {
    logic,
    settled: (turnId) => entryOf(turnId).promise,
    start(start, onFinal) {
      const turnId = "record" in start ? start.record.turnId : start.input.turnId;
      const sessionKey = "record" in start ? start.record.sessionKey : start.input.sessionKey;
      if (onFinal) entryOf(turnId).onFinal = onFinal;
      const done = entryOf(turnId).promise;
      const actor = createActor(logic, { input: start });
      deps.follow?.(actor, turnActorId(sessionKey, turnId));
      actor.start();
      // A failed checkpoint ends the actor here; it resumes from its last durable checkpoint later.
      done.catch(() => actor.stop());
      return {
        turnId,
        done,
        cancel: () => actor.send({ type: "cancel" }),
        inject: (content, messageId) => actor.send({ type: "inject", content, messageId }),
        async stop() {
          const entry = entries.get(turnId);
          actor.stop();
          await entry?.chain;
          barrier.forget(turnId);
        },
      };
    },
    running: () => [...entries].filter(([, e]) => e.live).map(([id]) => id),
    drain: async () => void (await Promise.allSettled([...entries.values()].map((e) => e.chain))),
  };
}

/** Runs (or resumes) one turn on its own; its final batch carries `onFinal`'s ops. */
export function startTurn(deps: TurnDeps, start: TurnStart, onFinal?: FinalOps): TurnHandle {
  return createTurnRuntime(deps).start(start, onFinal);
}
