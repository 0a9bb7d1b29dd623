import type { Daemon } from "../daemon-types.js";
import { channelActorId, sessionActorId } from "../../machines/supervision.js";
import { listOpenTurns } from "../store/turns.js";
import { tokenCounts } from "../memory/tokens.js";
import type { ActorNode } from "./actor-view.js";

/** What the control API shows of the daemon beyond its actor tree: whether a session is busy, subagents and the supervisor's records in the tree, what it holds in memory. */

/**
 * Whether work of a session is under way: its actor is doing anything but waiting for a message
 * (loading, a turn waiting for a slot or running), a turn of it is open (running, or about to
 * resume), or a subagent it spawned runs.
 */
export async function sessionBusy(daemon: Daemon, key: string): Promise<boolean> {
  const ref = daemon.sessions.get(sessionActorId(key));
  const snapshot = ref?.getSnapshot() as { status: string; value: unknown } | undefined;
  if (snapshot?.status === "active" && snapshot.value !== "idle") return true;
  // A corrupt open-turn record names no turn that could be running; deleting the session removes it.
  if ((await listOpenTurns(daemon.store, key, { onCorrupt: () => {} })).length > 0) return true;
  return daemon.subagents.active().some((a) => a.record.origin.sessionKey === key);
}

/** Subagents are turn actors of the pool; the tree shows them under the session that spawned them. */
export function subagentsUnder(daemon: Daemon) {
  return (root: ActorNode) => {
    const shown = new Set<string>();
    const walk = (n: ActorNode): void => void (shown.add(n.id), n.children.forEach(walk));
    walk(root);
    for (const { record, phase, since } of daemon.subagents.active()) {
      // Running ones are in the tree already (their turn actor); queued ones are not actors yet.
      if (shown.has(`subagent:${record.id}`)) continue;
      const parent = root.children.find((c) => c.id === sessionActorId(record.origin.sessionKey)) ?? root;
      parent.children.push({ id: `subagent:${record.id}`, kind: "subagent", machine: "turn", state: phase, since, children: [] });
    }
  };
}

/**
 * What the daemon keeps in memory that grows with traffic up to a bound (GET /api/status; the soak
 * bench prints it each minute): live session actors, the unarchived messages their histories hold
 * (up to each session's budget), the token counts cached (up to a fixed number); beside them, how
 * many chunks consolidation archived since the start (it keeps those histories at their budget).
 */
export function heldNow(daemon: Daemon) {
  const consolidator = daemon.conversation.consolidator;
  return { liveSessions: daemon.sessions.size(), keptSessions: consolidator.held(), keptMessages: consolidator.keptMessages(), archivedChunks: consolidator.archivedChunks(), tokenCounts: tokenCounts() };
}

/** Children the supervisor gave up on, with their last error. */
export function failedChildren(daemon: Daemon) {
  return Object.values(daemon.supervisor.getSnapshot().context.children)
    .filter((c) => c.status !== "running")
    .map((c) => ({ id: c.id, kind: c.kind, status: c.status, error: c.lastError, since: c.since }));
}


/** The supervisor's view: restart counts on its children, and those restarting or failed (no live actor) listed with their error. */
export function supervision(daemon: Daemon, root: ActorNode) {
  for (const record of Object.values(daemon.supervisor.getSnapshot().context.children)) {
    const node = root.children.find((c) => c.id === record.id);
    const restarts = record.failures.length;
    if (node) {
      if (restarts) node.restarts = restarts;
      continue;
    }
    if (record.status === "running") continue;
    root.children.push({ id: record.id, kind: record.kind, machine: null, state: record.status, since: record.since, error: record.lastError ?? undefined, restarts, children: [] });
  }
}

/**
 * A channel that cannot reach its platform is shown so in the tree: its actor runs (a promise, always
 * "active"), but its link backs off; the node says so, since when, and the last error (redacted).
 */
export function channelLinks(daemon: Daemon, root: ActorNode) {
  for (const c of daemon.channels()) {
    if (c.state !== "backing_off") continue;
    const node = root.children.find((n) => n.id === channelActorId(c.name));
    if (!node) continue;
    node.state = "backing_off";
    node.since = c.since ?? node.since;
    if (c.error) node.error = c.error;
  }
}

/**
 * Each channel's state for GET /health, as /api/actors and `troupe daemon status` have it (from its
 * link to its platform: started, backing off since its first failure with the last error, failed…),
 * so a monitor sees a channel that is down without the token. Errors are redacted once more here:
 * a supervisor's record keeps the failure's message as it was thrown.
 */
export function channelHealth(daemon: Daemon, redact: (text: string) => string) {
  return daemon.channels().map((c) => ({ ...c, error: c.error === null ? null : redact(c.error) }));
}
