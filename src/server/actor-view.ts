/** The live actor tree as it is shown (src/server/actor-tree.ts keeps it). */

/** One live actor, as GET /api/actors, `troupe daemon status` and the inspector show it. */
export interface ActorNode {
  /** Readable and unique: supervisor, channel:api, session:<key>, turn:<session>:<turnId>, subagent:<id>, or <parent>/<effect>. */
  id: string;
  kind: string;
  machine: string | null;
  state: string;
  since: number;
  error?: string;
  /** Restarts within the supervisor's intensity window. */
  restarts?: number;
  children: ActorNode[];
}

/** What the view reads of a tracked actor. */
export interface ViewedNode {
  id: string;
  kind: string;
  machine: string | null;
  state: string;
  since: number;
  /** The root of another system than the supervisor's: the readable id it hangs under. */
  attach?: string;
  children: Map<string, ViewedNode>;
}

function toNode(node: ViewedNode, attached: Map<string, ViewedNode[]>): ActorNode {
  const children = [...node.children.values()].map((c) => toNode(c, attached));
  for (const other of attached.get(node.id) ?? []) children.push(toNode(other, attached));
  return { id: node.id, kind: node.kind, machine: node.machine, state: node.state, since: node.since, children };
}

/** The tree rooted at `root`; the roots of other systems hang under the actor they attach to (else under `root`). */
export function treeView(root: ViewedNode, roots: Iterable<ViewedNode>, all: Iterable<ViewedNode>): ActorNode {
  const ids = new Set<string>();
  for (const node of all) ids.add(node.id);
  const attached = new Map<string, ViewedNode[]>();
  for (const node of roots) {
    if (node === root) continue;
    const under = node.attach && ids.has(node.attach) ? node.attach : root.id;
    const list = attached.get(under);
    if (list) list.push(node);
    else attached.set(under, [node]);
  }
  return toNode(root, attached);
}
