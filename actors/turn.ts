import { createActor, type AnyActorRef } from "xstate";
import type { Logger } from "pino";
import type { Bus } from "../src/bus/index.js";
import { turnActorId } from "../src/server/actor-names.js";
import { microcompact } from "../src/context/microcompact.js";
import { fitToBudget } from "../src/memory/fit.js";
import { fixedCost } from "../src/memory/tokens.js";
import { mergeConsecutiveUsers, repairHistory } from "../src/providers/history.js";
import type { LlmProvider } from "../src/providers/client.js";
import { createCheckpointBarrier, type CheckpointBarrier } from "../src/store/checkpoint-barrier.js";
import type { Store, StoreOp } from "../src/store/store.js";
import type { ToolJournalRecord } from "../src/store/turn-journal.js";
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
import { createRunTools } from "./run-tools.js";
import { attachCheckpoints, type CheckpointScope, type Entry } from "./turn-checkpoint.js";

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

/** The turn runtime: each turn actor it starts is checkpointed by attachCheckpoints (turn-checkpoint.ts). */
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
  const checkpointing: CheckpointScope = { deps, now, barrier, fresh, prestarted, forgetStarted, journalWrites, entries, entryOf, defaultFinal };

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
    if (start) attachCheckpoints(checkpointing, scope.self, start);
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
