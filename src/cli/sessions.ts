import { TroupeError } from "../errors.js";
import type { DataPaths } from "../paths.js";
import { sessionDetail, sessionsOverview, type SessionDetail, type SessionOverview } from "../store/session-view.js";
import { deleteSessionOps, type SessionDeletion } from "../store/sessions.js";
import { openStore, type CorruptRecord, type Store } from "../store/store.js";
import { corruptLines } from "./corrupt-lines.js";
import { printable } from "./printable.js";
import { connectStoreHolder, openOrReachHolder, type DaemonClient } from "./client.js";

/** A time as `YYYY-MM-DD HH:MM` (UTC). */
export const when = (ms: number) => new Date(ms).toISOString().replace("T", " ").slice(0, 16);
const oneLine = (text: string, max = 200) => {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

/**
 * Goes through the running daemon, or the in-process `troupe agent`, when one holds the store; else to
 * the store directly. A holder that has only just opened the store serves the control API a moment
 * later, or lets go (openOrReachHolder).
 */
async function withData<T>(paths: DataPaths, viaApi: (client: DaemonClient) => Promise<T>, direct: (store: Store) => Promise<T>): Promise<T> {
  const client = await connectStoreHolder(paths);
  if (client) return viaApi(client);
  const got = await openOrReachHolder(paths, () => openStore(paths.storeDir));
  if ("holder" in got) return viaApi(got.holder);
  const store = got.opened;
  try {
    return await direct(store);
  } finally {
    await store.close();
  }
}

export function sessionListLines(sessions: SessionOverview[]): string[] {
  if (sessions.length === 0) return ["no sessions yet"];
  const rows = sessions
    .sort((a, b) => b.updatedAt - a.updatedAt)
    .map((s) => {
      // The newest turn's failure shows until a later turn succeeds.
      const ended = s.lastTurnState === "failed" ? "failed" : s.lastTurnState === "max_iterations" ? "stopped at max iterations" : "";
      const status = [ended, s.interrupted ? `${s.interrupted} interrupted` : "", s.resumed ? `${s.resumed} resumed` : ""].filter(Boolean).join(", ");
      return [s.key, String(s.turns), String(s.usage.totalTokens), when(s.updatedAt), status || "ok"];
    });
  const header = ["SESSION", "TURNS", "TOKENS", "UPDATED", "STATUS"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [header, ...rows].map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  "));
}

/** 404 from the daemon means there is no such session. */
const unlessMissing = (err: Error) => {
  if (/\b404\b/.test(err.message)) return undefined;
  throw err;
};

export function sessionShowLines(s: SessionDetail, opts: { all?: boolean } = {}): string[] {
  const lines = [`session ${s.key}: ${s.turns.length} turn(s), ${s.usage.totalTokens} tokens, epoch ${s.epoch}`, "", "transcript:"];
  let epoch: number | undefined;
  for (const m of s.messages) {
    if (opts.all && m.epoch !== epoch) {
      epoch = m.epoch;
      lines.push(`epoch ${epoch} (${epoch === s.epoch ? "current" : "before /new"}):`);
    }
    if (m.role === "assistant" && m.tool_calls?.length) {
      lines.push(`  assistant → ${m.tool_calls.map((c) => `${c.function.name}(${oneLine(c.function.arguments, 80)})`).join(", ")}`);
      if (m.content) lines.push(`  assistant: ${oneLine(m.content)}`);
    } else if (m.role === "tool") lines.push(`  tool ${m.name ?? ""}: ${oneLine(m.content)}`);
    else if (m.role !== "system") lines.push(`  ${m.role}: ${oneLine(typeof m.content === "string" ? m.content : JSON.stringify(m.content))}`);
  }
  lines.push("", "turns:");
  for (const t of s.turns) {
    const notes = [t.final ? "" : "interrupted", t.resumes ? `resumed ${t.resumes}×` : ""].filter(Boolean).join(", ");
    lines.push(`  ${t.turnId}  ${when(t.createdAt)}  ${t.state}${notes ? ` (${notes})` : ""}`);
  }
  if (s.subagents.length) {
    lines.push("", "subagents (troupe sessions show subagent:<id> for a transcript):");
    for (const a of s.subagents) lines.push(`  ${a.id}  ${when(a.createdAt)}  ${a.status}  ${a.label}`);
  }
  return lines;
}

export { corruptLines };

/** `troupe sessions list`. */
export async function listSessionsCommand(paths: DataPaths): Promise<number> {
  const { sessions, corrupt } = await withData(
    paths,
    (client) => client.get<{ sessions: SessionOverview[]; corrupt?: CorruptRecord[] }>("/api/sessions"),
    (store) => sessionsOverview(store),
  );
  for (const line of sessionListLines(sessions)) console.log(printable(line));
  for (const line of corruptLines(corrupt)) console.error(line);
  return 0;
}

/** `troupe sessions show KEY [--all]`: --all adds the epochs before each /new. */
export async function showSessionCommand(paths: DataPaths, key: string, opts: { all?: boolean } = {}): Promise<number> {
  const detail = await withData(
    paths,
    async (client) => client.get<SessionDetail>(`/api/sessions/${encodeURIComponent(key)}${opts.all ? "?all=1" : ""}`).catch(unlessMissing),
    (store) => sessionDetail(store, key, { allEpochs: opts.all }),
  );
  if (!detail) throw new TroupeError(`no session ${key}; troupe sessions list shows them`);
  for (const line of sessionShowLines(detail, opts)) console.log(printable(line));
  for (const line of corruptLines(detail.corrupt)) console.error(line);
  return 0;
}

/**
 * `troupe sessions delete KEY`: through the daemon when it runs (which refuses while a turn of the
 * session runs), else in the store.
 */
export async function deleteSessionCommand(paths: DataPaths, key: string): Promise<number> {
  const counts = await withData(
    paths,
    async (client) => client.delete<SessionDeletion["counts"]>(`/api/sessions/${encodeURIComponent(key)}`).catch(unlessMissing),
    async (store) => {
      const deletion = await deleteSessionOps(store, key);
      if (deletion) await store.batch(deletion.ops, { sync: true });
      return deletion?.counts;
    },
  );
  if (!counts) throw new TroupeError(`no session ${key}; troupe sessions list shows them`);
  const also = [
    counts.interrupted ? `${counts.interrupted} interrupted turn(s) discarded` : "",
    counts.inbox ? `${counts.inbox} unanswered message(s)` : "",
    counts.subagents ? `${counts.subagents} subagent(s)` : "",
  ].filter(Boolean);
  console.log(`deleted session ${key}: ${counts.messages} message(s), ${counts.turns} turn(s)${also.length ? `, ${also.join(", ")}` : ""}`);
  return 0;
}
