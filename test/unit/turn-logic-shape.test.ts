import { describe, expect, it } from "vitest";
import { createTurnRuntime, type TurnDeps } from "../../actors/turn.js";
import type { LlmProvider } from "../../src/providers/client.js";
import type { Store } from "../../src/store/store.js";
import { createToolRegistry } from "../../src/tools/registry.js";

/** What a runtime needs to be made (nothing here is called: no turn runs). */
const deps = (): TurnDeps => ({
  store: {} as Store,
  provider: { name: "none", model: "none", chat: () => Promise.reject(new Error("not called")) } as LlmProvider,
  registry: createToolRegistry(),
  workspace: "/nowhere",
});

describe("turn runtime logic", () => {
  // V8 gives an object a hidden class of its own when its prototype is an object made per runtime
  // (Object.create(machine)); XState's hot functions optimized for one runtime's turn logic were
  // then deoptimized ("wrong map") and compiled again for the next (each subagent runs a runtime of its own).
  it("has the same prototype and own keys in every runtime, so every runtime's turn logic has one shape", () => {
    const a = createTurnRuntime(deps()).logic;
    const b = createTurnRuntime(deps()).logic;
    expect(a).not.toBe(b);
    expect(Object.getPrototypeOf(a)).toBe(Object.getPrototypeOf(b));
    expect(Object.keys(a)).toEqual(Object.keys(b));
  });
});
