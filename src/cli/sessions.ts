import { TroupeError } from "../errors.js";
import type { DataPaths } from "../paths.js";
import { sessionDetail, sessionsOverview, type SessionDetail, type SessionOverview } from "../store/session-view.js";
import { openStore, type CorruptRecord, type Store } from "../store/store.js";
import { connectDaemon } from "./client.js";

/** A time as `YYYY-MM-DD HH:MM` (UTC). */
export const when = (ms: number) => new Date(ms).toISOString().replace("T", " ").slice(0, 16);
const oneLine = (text: string, max = 200) => {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

/** Reads through the running daemon when there is one (it holds the store), else from the store directly. */
async function withData<T>(paths: DataPaths, viaApi: (get: <R>(path: string) => Promise<R>) => Promise<T>, direct: (store: Store) => Promise<T>): Promise<T> {
  const client = await connectDaemon(paths);
  if (client) return viaApi((path) => client.get(path));
  const store = await openStore(paths.storeDir);
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
      const status = [s.interrupted ? `${s.interrupted} interrupted` : "", s.resumed ? `${s.resumed} resumed` : ""].filter(Boolean).join(", ");
      return [s.key, String(s.turns), String(s.usage.totalTokens), when(s.updatedAt), status || "ok"];
    });
  const header = ["SESSION", "TURNS", "TOKENS", "UPDATED", "STATUS"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [header, ...rows].map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  "));
}

export function sessionShowLines(s: SessionDetail): string[] {
  const lines = [`session ${s.key}: ${s.turns.length} turn(s), ${s.usage.totalTokens} tokens, epoch ${s.epoch}`, "", "transcript:"];
  for (const m of s.messages) {
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

/** One line per record a listing skipped because it is corrupt (for stderr: the listing itself stays clean). */
export const corruptLines = (corrupt: CorruptRecord[] = []): string[] =>
  corrupt.map((c) => `warning: skipped corrupt record ${c.sublevel}/${c.key} (${c.problem})`);

/** `troupe sessions list`. */
export async function listSessionsCommand(paths: DataPaths): Promise<number> {
  const { sessions, corrupt } = await withData(
    paths,
    (get) => get<{ sessions: SessionOverview[]; corrupt?: CorruptRecord[] }>("/api/sessions"),
    (store) => sessionsOverview(store),
  );
  for (const line of sessionListLines(sessions)) console.log(line);
  for (const line of corruptLines(corrupt)) console.error(line);
  return 0;
}

/** `troupe sessions show KEY`. */
export async function showSessionCommand(paths: DataPaths, key: string): Promise<number> {
  const detail = await withData(
    paths,
    async (get) => get<SessionDetail>(`/api/sessions/${encodeURIComponent(key)}`).catch((err: Error) => {
      if (/404/.test(err.message)) return undefined;
      throw err;
    }),
    (store) => sessionDetail(store, key),
  );
  if (!detail) throw new TroupeError(`no session ${key}; troupe sessions list shows them`);
  for (const line of sessionShowLines(detail)) console.log(line);
  for (const line of corruptLines(detail.corrupt)) console.error(line);
  return 0;
}
