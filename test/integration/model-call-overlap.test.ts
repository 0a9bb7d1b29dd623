import { describe, expect, it } from "vitest";
import { startTurn } from "../../actors/turn.js";
import { composeHooks } from "../../src/hooks/hook.js";
import type { Store } from "../../src/store/store.js";
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

describe("a model call and the checkpoint before it", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let store: Store | undefined;
  closeAfterEach(() => [store, fake]);

  it("without hooks the request goes out while the checkpoint is written; its answer is taken once the checkpoint is durable", async () => {
    fake = await startFakeOpenAi([{ content: "Hello there." }]);
    const deps = await turnDeps(await tempDir(), fake.url, countingTools().registry);
    store = deps.store;
    const first = holdFirstCheckpoint(deps.store);
    const states: string[] = [];
    deps.bus!.ofType("turn_state").subscribe((e) => states.push(e.state));
    let streamed = false;
    deps.bus!.ofType("progress").subscribe(() => (streamed = true));
    const turn = startTurn(deps, { input: turnInput("t-overlap", "hi") });

    // The answer streamed in while the first checkpoint is still held: the call did not wait for the disk.
    await until(() => streamed, 10_000, "the answer streamed while the first checkpoint is held");
    expect(fake.requests).toHaveLength(1);
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

  it("with hooks (which may have effects) the call starts only once its checkpoint is durable", async () => {
    fake = await startFakeOpenAi([{ content: "Hello there." }]);
    const deps = await turnDeps(await tempDir(), fake.url, countingTools().registry);
    store = deps.store;
    const first = holdFirstCheckpoint(deps.store);
    const durableAtHook: boolean[] = [];
    const hooks = composeHooks([{ beforeIteration: () => void durableAtHook.push(first.durable) }]);
    const turn = startTurn({ ...deps, hooks }, { input: turnInput("t-hooked", "hi") });
    await new Promise((resolve) => setImmediate(resolve));
    first.release();
    expect((await turn.done).state).toBe("responded");
    expect(durableAtHook).toEqual([true]);
    expect(fake.requests).toHaveLength(1);
  });
});
