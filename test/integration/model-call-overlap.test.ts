import { describe, expect, it } from "vitest";
import { startTurn } from "../../actors/turn.js";
import { composeHooks } from "../../src/hooks/hook.js";
import type { Store } from "../../src/store/store.js";
import { toolJournal } from "../../src/store/turn-journal.js";
import { getTurn } from "../../src/store/turns.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { countingTools, turnDeps, turnInput } from "../helpers/turn-env.js";
import { useTempDirs } from "../helpers/tmp.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { until } from "../helpers/wait.js";

/** Holds the turn's first synced batch (its first checkpoint) until `release`; `durable` once it is written. */
function holdFirstCheckpoint(store: Store) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const state = { held: false, durable: false, release };
  const batch = store.batch.bind(store);
  store.batch = async (ops, opts) => {
    if (!opts?.sync || state.held) return batch(ops, opts);
    state.held = true;
    await gate;
    await batch(ops, opts);
    state.durable = true;
  };
  return state;
}

describe("what a turn's steps wait for", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let store: Store | undefined;
  closeAfterEach(() => [store, fake]);

  /** A turn's deps against a model that answers "Hello there.", their store's first checkpoint held. */
  async function heldFirstCheckpoint() {
    fake = await startFakeOpenAi([{ content: "Hello there." }]);
    const deps = await turnDeps(await tempDir(), fake.url, countingTools().registry);
    store = deps.store;
    return { deps, model: fake, first: holdFirstCheckpoint(deps.store) };
  }

  it("without hooks the request goes out while the checkpoint is written; its answer is taken once the checkpoint is durable", async () => {
    const { deps, model, first } = await heldFirstCheckpoint();
    const states: string[] = [];
    deps.bus!.ofType("turn_state").subscribe((e) => states.push(e.state));
    let streamed = false;
    deps.bus!.ofType("progress").subscribe(() => (streamed = true));
    const turn = startTurn(deps, { input: turnInput("t-overlap", "hi") });

    // The answer streamed in while the first checkpoint is still held: the call did not wait for the disk.
    await until(() => streamed, 10_000, "the answer streamed while the first checkpoint is held");
    expect(model.requests).toHaveLength(1);
    expect(first.durable).toBe(false);
    // Nothing follows from the answer until the checkpoint before the call is durable.
    expect(states).toEqual(["awaiting_model"]);

    first.release();
    const result = await turn.done;
    expect(first.durable).toBe(true);
    expect(result.state).toBe("responded");
    expect(result.output.reply).toBe("Hello there.");
    expect(states).toEqual(["awaiting_model", "responded"]);
  });

  it("a tool's results go on to the next model call without waiting for its tool.completed write; the next checkpoint is written after it", async () => {
    fake = await startFakeOpenAi([{ toolCalls: [{ id: "l1", name: "lookup", arguments: { word: "alpha", delayMs: 1 } }] }, { content: "Alpha is a letter." }]);
    const deps = await turnDeps(await tempDir(), fake.url, countingTools().registry);
    store = deps.store;
    const batch = deps.store.batch.bind(deps.store);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let completedWritten = false;
    const syncedAfterCompleted: string[] = [];
    deps.store.batch = async (ops, opts) => {
      const completed = ops.some((op) => op.type === "put" && (op.value as { status?: string }).status === "completed");
      if (completed) {
        await gate;
        await batch(ops, opts);
        completedWritten = true;
        return;
      }
      if (opts?.sync) syncedAfterCompleted.push(`${completedWritten}`);
      return batch(ops, opts);
    };
    const turn = startTurn(deps, { input: turnInput("t-completed", "define alpha") });

    // The second model call is made while the tool's completed record is still being written.
    await until(() => fake!.requests.length === 2, 10_000, "the second model call while tool.completed is held");
    expect(completedWritten).toBe(false);
    release();
    const result = await turn.done;
    expect(result.state).toBe("responded");
    expect(result.output.reply).toBe("Alpha is a letter.");
    // Checkpoints 1 and 2 before it; the next ones (awaiting_model, responded) only after it was written.
    expect(syncedAfterCompleted).toEqual(["false", "false", "true", "true"]);
    const journal = await toolJournal(deps.store, "t-completed");
    expect([...journal.values()].map((r) => r.status)).toEqual(["completed"]);
  });

  it("a failed tool.completed write fails the turn's next checkpoint: the turn stays open at awaiting_tools, to resume from there", async () => {
    fake = await startFakeOpenAi([{ toolCalls: [{ id: "l1", name: "lookup", arguments: { word: "alpha", delayMs: 1 } }] }, { content: "Alpha is a letter." }]);
    const deps = await turnDeps(await tempDir(), fake.url, countingTools().registry);
    store = deps.store;
    const batch = deps.store.batch.bind(deps.store);
    deps.store.batch = async (ops, opts) => {
      if (ops.some((op) => op.type === "put" && (op.value as { status?: string }).status === "completed")) throw new Error("disk on fire");
      return batch(ops, opts);
    };
    await expect(startTurn(deps, { input: turnInput("t-lost", "define alpha") }).done).rejects.toThrow("disk on fire");
    const record = await getTurn(deps.store, "t-lost");
    expect([record?.state, record?.final]).toEqual(["awaiting_tools", false]);
  });

  it("with hooks (which may have effects) the call starts only once its checkpoint is durable", async () => {
    const { deps, model, first } = await heldFirstCheckpoint();
    const durableAtHook: boolean[] = [];
    const hooks = composeHooks([{ beforeIteration: () => void durableAtHook.push(first.durable) }]);
    const turn = startTurn({ ...deps, hooks }, { input: turnInput("t-hooked", "hi") });
    await new Promise((resolve) => setImmediate(resolve));
    first.release();
    expect((await turn.done).state).toBe("responded");
    expect(durableAtHook).toEqual([true]);
    expect(model.requests).toHaveLength(1);
  });
});
