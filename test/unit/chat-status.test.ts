import { describe, expect, it } from "vitest";
import { formatUptime, statusText, type StatusFacts } from "../../src/chat-status.js";

// The cases of nanobot's tests/test_build_status.py, and what troupe adds.
const facts = (over: Partial<StatusFacts> = {}): StatusFacts => ({
  version: "0.1.0",
  model: "glm-4-plus",
  startedAt: 1_000_000,
  now: 1_000_000 + 65_000,
  lastUsage: { promptTokens: 2000, completionTokens: 300 },
  contextWindowTokens: 128_000,
  inputBudget: 128_000 - 8192 - 1024,
  contextEstimate: 5000,
  sessionKey: "telegram:42",
  messages: 10,
  consolidated: 0,
  turns: 3,
  totalTokens: 7000,
  busy: false,
  subagents: 0,
  cron: { jobs: 0, nextRunAt: null },
  ...over,
});

describe("/status", () => {
  it("has nanobot's lines: version, model, tokens, context, session, uptime, tasks", () => {
    const text = statusText(facts());
    expect(text.split("\n")).toEqual([
      "🎭 troupe v0.1.0",
      "🧠 Model: glm-4-plus",
      "📊 Tokens: 2000 in / 300 out (last turn)",
      "📚 Context: 5k/128k (4% of input budget)",
      "💬 Session: 10 messages (telegram:42: 3 turn(s), 7000 tokens in all; 0 consolidated into memory)",
      "⏱ Uptime: 1m 5s",
      "⚡ Tasks: 0 active",
      "⏰ Cron: no jobs",
    ]);
  });

  it("shows the cached share only when the provider reported cached tokens", () => {
    expect(statusText(facts({ lastUsage: { promptTokens: 2000, completionTokens: 300, cachedTokens: 1200 } }))).toContain("2000 in / 300 out (last turn) (60% cached)");
    expect(statusText(facts()).toLowerCase()).not.toContain("cached");
    expect(statusText(facts({ lastUsage: { promptTokens: 2000, completionTokens: 300, cachedTokens: 0 } })).toLowerCase()).not.toContain("cached");
    expect(statusText(facts({ lastUsage: { promptTokens: 1000, completionTokens: 100, cachedTokens: 1000 } }))).toContain("100% cached");
  });

  it("measures the context against the input budget, not the whole window, capped at 999%", () => {
    expect(statusText(facts({ contextEstimate: 120_000, inputBudget: 128_000 - 8192 - 1024 }))).toContain("(101% of input budget)");
    expect(statusText(facts({ contextWindowTokens: 10_000, inputBudget: 10_000 - 4096 - 1024, contextEstimate: 100_000 }))).toContain("(999% of input budget)");
    expect(statusText(facts({ contextEstimate: 640 }))).toContain("📚 Context: 640/128k (0% of input budget)");
  });

  it("counts a running turn and this session's subagents as tasks, and lists the cron jobs", () => {
    const text = statusText(facts({ busy: true, subagents: 2, cron: { jobs: 3, nextRunAt: 1_000_000 + 65_000 + 5 * 60_000 } }));
    expect(text).toContain("⚡ Tasks: 3 active (a turn, 2 subagent(s))");
    expect(text).toContain("⏰ Cron: 3 job(s), next in 5m");
  });

  it("says so before the session's first turn", () => {
    expect(statusText(facts({ lastUsage: undefined }))).toContain("📊 Tokens: no turn yet");
  });

  it("uptime as nanobot writes it", () => {
    expect(formatUptime(59_000)).toBe("0m 59s");
    expect(formatUptime(3_599_000)).toBe("59m 59s");
    expect(formatUptime(3_600_000 + 4 * 60_000)).toBe("1h 4m");
  });
});
