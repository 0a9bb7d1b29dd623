
/**
 * A machine's graph, read from its own state nodes (`machine.root`), so what `troupe inspect` and the
 * inspector draw is the machine as it is, never a hand-kept copy.
 */

export interface StateInfo {
  /** The state node's id, e.g. "session.active.running". */
  id: string;
  key: string;
  parent: string | null;
  type: "atomic" | "compound" | "parallel" | "final" | "history";
  /** The initial child of a compound state. */
  initial: string | null;
  /** What runs while the state is active (invoked actors, by their key in setup). */
  invokes: string[];
}

export interface TransitionInfo {
  source: string;
  /** null: the event is handled in place (actions only, no state change). */
  target: string | null;
  /** The event as people read it: a named event, `done: <actor>`, `error: <actor>`, `after <delay>`, or `always`. */
  event: string;
  guard: string | null;
}

export interface MachineGraph {
  name: string;
  id: string;
  initial: string | null;
  states: StateInfo[];
  transitions: TransitionInfo[];
  /** The named events the machine accepts (xstate's own done/error/after events excluded). */
  events: string[];
}

interface Node {
  id: string;
  key: string;
  type: StateInfo["type"];
  parent?: Node;
  states: Record<string, Node>;
  initial?: { target?: Node[] };
  invoke: Array<{ src: unknown; id: string }>;
  transitions: Map<string, Transition[]>;
  always?: Transition[];
  after: Array<{ delay: unknown; eventType: string }>;
}

interface Transition {
  target?: Node[];
  guard?: unknown;
}

const guardName = (guard: unknown): string | null => {
  if (!guard) return null;
  if (typeof guard === "string") return guard;
  if (typeof guard === "function") return guard.name && guard.name !== "guard" ? guard.name : "(inline)";
  const type = (guard as { type?: unknown }).type;
  return typeof type === "string" ? type : "(inline)";
};

/** `xstate.done.actor.<invoke id>` → `done: <src>`; `xstate.after.<delay>.<state>` → `after <delay>`. */
function eventLabel(eventType: string, node: Node): string {
  const actor = /^xstate\.(done|error)\.actor\.(.+)$/.exec(eventType);
  if (actor) {
    const invoke = node.invoke.find((i) => i.id === actor[2]);
    if (actor[2] === "*") return `${actor[1]}: any child`;
    return `${actor[1]}: ${typeof invoke?.src === "string" ? invoke.src : actor[2]}`;
  }
  const after = node.after.find((a) => a.eventType === eventType);
  if (after) return `after ${typeof after.delay === "number" ? `${after.delay} ms` : String(after.delay)}`;
  if (eventType === "*") return "any event";
  return eventType;
}

/**
 * A machine as this module reads it: its definition's root state node, walked as plain data (the
 * `Node` shape above), so reading a graph needs nothing of XState itself.
 */
export interface MachineDefinition {
  root: unknown;
}

/** The graph of one machine. */
export function machineGraph(name: string, machine: MachineDefinition): MachineGraph {
  const root = machine.root as unknown as Node;
  const states: StateInfo[] = [];
  const transitions: TransitionInfo[] = [];
  const events = new Set<string>();
  const visit = (node: Node) => {
    if (node !== root) {
      states.push({
        id: node.id,
        key: node.key,
        parent: node.parent && node.parent !== root ? node.parent.id : null,
        type: node.type,
        initial: node.initial?.target?.[0]?.id ?? null,
        invokes: node.invoke.map((i) => (typeof i.src === "string" ? i.src : i.id)),
      });
    }
    for (const [eventType, list] of node.transitions) {
      if (!eventType.startsWith("xstate.")) events.add(eventType);
      for (const t of list) transitions.push({ source: node.id, target: t.target?.[0]?.id ?? null, event: eventLabel(eventType, node), guard: guardName(t.guard) });
    }
    for (const t of node.always ?? []) transitions.push({ source: node.id, target: t.target?.[0]?.id ?? null, event: "always", guard: guardName(t.guard) });
    Object.values(node.states).forEach(visit);
  };
  visit(root);
  return { name, id: root.id, initial: root.initial?.target?.[0]?.id ?? null, states, transitions, events: [...events].sort() };
}

/** Every machine of a catalogue (machines/index.ts), by name. */
export function machineGraphs(catalogue: Record<string, MachineDefinition>): MachineGraph[] {
  return Object.entries(catalogue).map(([name, m]) => machineGraph(name, m));
}

/** The state's id below its machine's: "active.running" for "session.active.running". */
export const localId = (graph: MachineGraph, id: string) => (id.startsWith(`${graph.id}.`) ? id.slice(graph.id.length + 1) : id);

/** A readable listing: each state (indented by depth) with what it invokes and its transitions. */
export function graphText(graph: MachineGraph): string {
  const lines = [`${graph.name} (machine "${graph.id}", initial ${graph.initial ? localId(graph, graph.initial) : "-"})`];
  lines.push(`  events: ${graph.events.join(", ") || "(none)"}`);
  const depth = (s: StateInfo): number => (s.parent ? 1 + depth(graph.states.find((p) => p.id === s.parent)!) : 0);
  const rootTransitions = graph.transitions.filter((t) => t.source === graph.id);
  for (const t of rootTransitions) lines.push(`  (any state) ${transitionText(graph, t)}`);
  for (const s of graph.states) {
    const pad = "  ".repeat(depth(s) + 1);
    const notes = [
      s.type === "final" ? "final" : s.type === "compound" ? `initial ${localId(graph, s.initial ?? "")}` : null,
      s.invokes.length ? `invokes ${s.invokes.join(", ")}` : null,
    ].filter(Boolean);
    lines.push(`${pad}${s.key}${notes.length ? ` [${notes.join("; ")}]` : ""}`);
    for (const t of graph.transitions.filter((x) => x.source === s.id)) lines.push(`${pad}  ${transitionText(graph, t)}`);
  }
  return lines.join("\n");
}

function transitionText(graph: MachineGraph, t: TransitionInfo): string {
  const guard = t.guard ? ` [${t.guard}]` : "";
  return `${t.event}${guard} → ${t.target ? localId(graph, t.target) : "(stays)"}`;
}

const mermaidId = (graph: MachineGraph, id: string) => localId(graph, id).replace(/[^A-Za-z0-9_]/g, "_");
const mermaidLabel = (text: string) => text.replace(/[:;#]/g, " ").replace(/\s+/g, " ").trim();

/** A Mermaid stateDiagram-v2 (nested states as composite states; transitions that stay in place are left out). */
export function graphMermaid(graph: MachineGraph): string {
  const lines = ["stateDiagram-v2", `  %% ${graph.name}`];
  const childrenOf = (parent: string | null) => graph.states.filter((s) => s.parent === parent);
  const emit = (parent: string | null, pad: string) => {
    const initial = parent ? graph.states.find((s) => s.id === parent)?.initial : graph.initial;
    if (initial) lines.push(`${pad}[*] --> ${mermaidId(graph, initial)}`);
    for (const s of childrenOf(parent)) {
      const id = mermaidId(graph, s.id);
      if (s.key !== id) lines.push(`${pad}state "${s.key}" as ${id}`);
      if (childrenOf(s.id).length) {
        lines.push(`${pad}state ${id} {`);
        emit(s.id, `${pad}  `);
        lines.push(`${pad}}`);
      }
      if (s.type === "final") lines.push(`${pad}${id} --> [*]`);
    }
  };
  emit(null, "  ");
  for (const t of graph.transitions) {
    if (!t.target || t.source === graph.id) continue;
    const label = mermaidLabel(`${t.event}${t.guard ? ` [${t.guard}]` : ""}`);
    lines.push(`  ${mermaidId(graph, t.source)} --> ${mermaidId(graph, t.target)} : ${label}`);
  }
  return lines.join("\n");
}
