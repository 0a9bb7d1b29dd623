import { createActor, fromPromise, type SnapshotFrom } from "xstate";
import type { Logger } from "pino";
import type { Bus } from "../src/bus/index.js";
import { microcompact } from "../src/context/microcompact.js";
import type { LlmProvider } from "../src/providers/client.js";
import { createCheckpointBarrier, type CheckpointBarrier } from "../src/store/checkpoint-barrier.js";
import type { Store, StoreOp } from "../src/store/store.js";
import { checkpointOps, closeTurnOp, openTurnOp, type TurnRecord } from "../src/store/turns.js";
import type { ToolRegistry } from "../src/tools/registry.js";
import { turnMachine, type CheckpointedInput, type TurnInput, type TurnOutput } from "../machines/turn.machine.js";
import { createCallModel } from "./call-model.js";
import { createRunTools } from "./run-tools.js";

export interface TurnDeps {
  store: Store;
  provider: LlmProvider;
  registry: ToolRegistry;
  workspace: string;
  bus?: Bus;
  logger?: Logger;
  now?: () => number;
  barrier?: CheckpointBarrier;
  /** false skips the per-transition checkpoints (only the final batch is written): for measuring their cost, never for use. */
  durable?: boolean;
}

export type TurnFinalState = "responded" | "failed" | "cancelled" | "max_iterations";

export interface TurnResult {
  turnId: string;
  state: TurnFinalState;
  output: TurnOutput;
}

export interface TurnHandle {
  turnId: string;
  done: Promise<TurnResult>;
  cancel(): void;
  inject(content: string, messageId?: string): void;
  /** Stops the turn where it is (shutdown) once its last checkpoint is durable; it resumes from there. */
  stop(): Promise<void>;
}

export type TurnStart =
  | { input: TurnInput; initialOps?: StoreOp[] }
  | { record: TurnRecord };

type TurnSnapshot = SnapshotFrom<typeof turnMachine>;

/** The turn machine with its effects supplied. */
export function turnLogic(deps: TurnDeps, barrier: CheckpointBarrier) {
  return turnMachine.provide({
    actors: {
      callModel: createCallModel({
        provider: deps.provider,
        tools: () => deps.registry.schemas(),
        barrier,
        bus: deps.bus,
        now: deps.now,
        compact: (messages) => microcompact(messages, (name) => deps.registry.get(name)?.readOnly === true),
      }),
      runTools: createRunTools({ registry: deps.registry, store: deps.store, barrier, workspace: deps.workspace, bus: deps.bus, now: deps.now }),
      checkpointed: fromPromise<void, CheckpointedInput>(({ input, signal }) => barrier.reached(input.turnId, input.seq, signal)),
    },
  });
}

/**
 * Runs (or resumes) one turn. Every snapshot is checkpointed in one synced batch (snapshot plus
 * journal record) before the effect that follows it may start. The final checkpoint carries the
 * caller's ops (session append, outbox) in the same atomic batch.
 */
export function startTurn(
  deps: TurnDeps,
  start: TurnStart,
  onFinal: (result: TurnResult) => Promise<StoreOp[]> = async () => [],
): TurnHandle {
  const now = deps.now ?? Date.now;
  const barrier = deps.barrier ?? createCheckpointBarrier();
  const resumed = "record" in start ? start.record : undefined;
  const input = resumed ? (resumed.input as TurnInput) : (start as { input: TurnInput }).input;
  const turnId = input.turnId;
  const createdAt = resumed?.createdAt ?? now();
  if (resumed) barrier.mark(turnId, resumed.seq);

  const actor = createActor(
    turnLogic(deps, barrier),
    resumed ? { snapshot: resumed.snapshot as never, input } : { input },
  );

  let chain: Promise<void> = Promise.resolve();
  let pendingInitial = resumed ? [] : [...((start as { initialOps?: StoreOp[] }).initialOps ?? []), openTurnOp(turnId, input.sessionKey)];
  const resumes = (resumed?.resumes ?? 0) + (resumed ? 1 : 0);
  let inputStored = Boolean(resumed);
  let settle!: { resolve: (r: TurnResult) => void; reject: (e: unknown) => void };
  const done = new Promise<TurnResult>((resolve, reject) => (settle = { resolve, reject }));

  const fail = (err: unknown) => {
    deps.logger?.error({ turnId, err }, "turn checkpoint failed; stopping the turn");
    actor.stop();
    barrier.forget(turnId);
    settle.reject(err);
  };

  const checkpoint = (snap: TurnSnapshot) => {
    const final = snap.status === "done";
    const record: TurnRecord = {
      turnId,
      sessionKey: input.sessionKey,
      state: String(snap.value),
      final,
      seq: snap.context.seq,
      snapshot: actor.getPersistedSnapshot(),
      input,
      createdAt,
      updatedAt: now(),
      resumes,
    };
    // Without durability only the final batch is written, and it carries the first one's ops.
    const write = deps.durable !== false || final;
    const initial = write ? pendingInitial : [];
    if (write) pendingInitial = [];
    const result: TurnResult | undefined = final
      ? { turnId, state: record.state as TurnFinalState, output: snap.output as TurnOutput }
      : undefined;
    deps.bus?.publish({ type: "turn_state", sessionKey: input.sessionKey, turnId, state: record.state, iteration: snap.context.iteration, at: record.updatedAt });
    chain = chain
      .then(async () => {
        const extra = result ? [...(await onFinal(result)), closeTurnOp(turnId, input.sessionKey)] : [];
        const withInput = write && !inputStored;
        if (write) await deps.store.batch([...initial, ...checkpointOps(record, snap.context.iteration, { withInput }), ...extra], { sync: true });
        if (withInput) inputStored = true;
        barrier.mark(turnId, record.seq);
        if (result) {
          barrier.forget(turnId);
          settle.resolve(result);
        }
      })
      .catch(fail);
  };

  actor.subscribe({
    next: (snap) => {
      if (snap.status === "error") return;
      checkpoint(snap);
    },
    error: (err) => fail(err),
  });
  actor.start();

  return {
    turnId,
    done,
    cancel: () => actor.send({ type: "cancel" }),
    inject: (content, messageId) => actor.send({ type: "inject", content, messageId }),
    async stop() {
      actor.stop();
      await chain;
      barrier.forget(turnId);
    },
  };
}
