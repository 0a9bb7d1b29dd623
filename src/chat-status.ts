/**
 * The /status answer, laid out as nanobot's (version, model, last usage, context against the input
 * budget, messages, uptime, tasks), with what troupe adds: the session's totals, its cron jobs and
 * how much of it memory has consolidated.
 */

export interface StatusFacts {
  version: string;
  model: string;
  /** When this process started (ms since the epoch). */
  startedAt: number;
  now: number;
  /** The session's last turn: tokens in and out (and cached, when the provider says). */
  lastUsage?: { promptTokens: number; completionTokens: number; cachedTokens?: number };
  contextWindowTokens: number;
  /** Tokens the next request's input may take (window − reply − safety buffer). */
  inputBudget: number;
  /** The next request's estimated input: system prompt, unarchived history, tools. */
  contextEstimate: number;
  sessionKey: string;
  /** Messages in the session (this epoch). */
  messages: number;
  consolidated: number;
  turns: number;
  totalTokens: number;
  /** A turn of this session is running. */
  busy: boolean;
  /** This session's subagents queued or running. */
  subagents: number;
  /** Enabled cron jobs (not the system ones) and the next run among them. */
  cron: { jobs: number; nextRunAt: number | null };
}

const k = (n: number) => (n >= 1000 ? `${Math.floor(n / 1000)}k` : String(n));

/** nanobot's uptime: "5m 12s" under an hour, "3h 4m" past it. */
export function formatUptime(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  return s >= 3600 ? `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m` : `${Math.floor(s / 60)}m ${s % 60}s`;
}

const inAbout = (ms: number) => (ms <= 0 ? "now" : ms < 3_600_000 ? `in ${Math.max(1, Math.round(ms / 60_000))}m` : `in ${(ms / 3_600_000).toFixed(1)}h`);

export function statusText(f: StatusFacts): string {
  const u = f.lastUsage;
  let tokens = u ? `📊 Tokens: ${u.promptTokens} in / ${u.completionTokens} out (last turn)` : "📊 Tokens: no turn yet";
  if (u?.cachedTokens && u.promptTokens) tokens += ` (${Math.floor((u.cachedTokens * 100) / u.promptTokens)}% cached)`;
  const budget = Math.max(f.inputBudget, 1);
  const pct = Math.min(Math.floor((f.contextEstimate / budget) * 100), 999);
  const window = f.contextWindowTokens > 0 ? k(f.contextWindowTokens) : "n/a";
  const tasks = (f.busy ? 1 : 0) + f.subagents;
  const parts = [f.busy ? "a turn" : "", f.subagents ? `${f.subagents} subagent(s)` : ""].filter(Boolean).join(", ");
  const cron =
    f.cron.jobs === 0 ? "⏰ Cron: no jobs" : `⏰ Cron: ${f.cron.jobs} job(s)${f.cron.nextRunAt === null ? "" : `, next ${inAbout(f.cron.nextRunAt - f.now)}`}`;
  return [
    `🎭 troupe v${f.version}`,
    `🧠 Model: ${f.model}`,
    tokens,
    `📚 Context: ${k(f.contextEstimate)}/${window} (${pct}% of input budget)`,
    `💬 Session: ${f.messages} messages (${f.sessionKey}: ${f.turns} turn(s), ${f.totalTokens} tokens in all; ${f.consolidated} consolidated into memory)`,
    `⏱ Uptime: ${formatUptime(f.now - f.startedAt)}`,
    `⚡ Tasks: ${tasks} active${parts ? ` (${parts})` : ""}`,
    cron,
  ].join("\n");
}
