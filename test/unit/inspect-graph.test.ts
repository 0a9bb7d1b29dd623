import { describe, expect, it } from "vitest";
import { createMachine } from "xstate";
import { machines } from "../../machines/index.js";
import { graphMermaid, graphText, machineGraph, machineGraphs } from "../../src/inspect/graph.js";

describe("machine graphs come from the machine definitions", () => {
  it("the turn machine: every state and transition, by the spec's names", () => {
    const g = machineGraph("turn", machines.turn);
    expect(g.states.map((s) => s.key).sort()).toEqual(["awaiting_model", "awaiting_tools", "cancelled", "failed", "finalizing", "finalizing_after_limit", "finalizing_content", "max_iterations", "responded", "tools_completed"]);
    expect(g.states.filter((s) => s.type === "final").map((s) => s.key).sort()).toEqual(["cancelled", "failed", "max_iterations", "responded"]);
    expect(g.events).toEqual(["cancel", "checkpointed", "inject"]);
    expect(g.initial).toBe("turn.awaiting_model");
    expect(g.transitions).toContainEqual({ source: "turn.awaiting_model", target: "turn.awaiting_tools", event: "done: callModel", guard: "hasToolCalls" });
    // At the iteration limit: one call without tools for a summary, then max_iterations (with it, or the fixed text).
    expect(g.transitions).toContainEqual({ source: "turn.tools_completed", target: "turn.finalizing_after_limit", event: "checkpointed", guard: "iterationLimitReached" });
    expect(g.transitions).toContainEqual({ source: "turn.finalizing_after_limit", target: "turn.max_iterations", event: "done: callModel", guard: "usableSummary" });
    expect(g.transitions).toContainEqual({ source: "turn.finalizing_after_limit", target: "turn.max_iterations", event: "error: callModel", guard: null });
    expect(g.states.find((s) => s.key === "awaiting_tools")?.invokes).toEqual(["runTools"]);
    // An empty answer is asked for again, a cut-off one continued: transitions of their own.
    expect(g.transitions).toContainEqual({ source: "turn.awaiting_model", target: "turn.awaiting_model", event: "done: callModel", guard: "retryEmpty" });
    expect(g.transitions).toContainEqual({ source: "turn.awaiting_model", target: "turn.awaiting_model", event: "done: callModel", guard: "cutOff" });
    expect(g.transitions).toContainEqual({ source: "turn.awaiting_model", target: "turn.finalizing", event: "done: callModel", guard: "emptyAgain" });
    expect(g.states.find((s) => s.key === "finalizing")?.invokes).toEqual(["callModel"]);
    expect(g.transitions).toContainEqual({ source: "turn.awaiting_model", target: "turn.finalizing_content", event: "done: callModel", guard: "hasHooks" });
    expect(g.transitions).toContainEqual({ source: "turn.finalizing", target: "turn.finalizing_content", event: "done: callModel", guard: "hasHooks" });
    expect(g.transitions).toContainEqual({ source: "turn.finalizing_content", target: "turn.responded", event: "done: finalizeContent", guard: null });
  });

  it("nested states keep their parent and initial child; after and always are named", () => {
    const g = machineGraph("session", machines.session);
    expect(g.states.find((s) => s.id === "session.active")).toMatchObject({ type: "compound", initial: "session.active.waiting" });
    expect(g.states.find((s) => s.id === "session.active.running")?.parent).toBe("session.active");
    expect(g.transitions).toContainEqual({ source: "session.idle", target: "session.passivated", event: "after idle", guard: null });
    expect(g.transitions).toContainEqual({ source: "session.next", target: "session.idle", event: "always", guard: "noWork" });
  });

  it("a changed machine is drawn as it is", () => {
    const m = createMachine({ id: "door", initial: "shut", states: { shut: { on: { open: "ajar" } }, ajar: { on: { slam: "shut" }, after: { 500: "shut" } } } });
    const g = machineGraph("door", m);
    expect(graphText(g)).toContain("open → ajar");
    expect(graphText(g)).toContain("after 500 ms → shut");
    expect(graphMermaid(g)).toContain("ajar --> shut : slam");
  });

  it("every machine of the catalogue has a graph and a Mermaid diagram", () => {
    const graphs = machineGraphs(machines);
    expect(graphs.map((g) => g.name)).toEqual(Object.keys(machines));
    for (const g of graphs) {
      const mermaid = graphMermaid(g);
      expect(mermaid.startsWith("stateDiagram-v2")).toBe(true);
      for (const s of g.states.filter((s) => s.parent === null)) expect(mermaid).toContain(s.key);
    }
  });
});
