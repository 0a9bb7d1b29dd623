import { describe, expect, it } from "vitest";
import { historyAnswer, skillsAnswer } from "../../src/chat-lists.js";
import type { ChatMessage } from "../../src/providers/messages.js";

// nanobot's /history and /skill (nanobot/command/builtin.py; tests/command/test_skill_command.py).
describe("/history and /skill, as nanobot answers them", () => {
  const chat: ChatMessage[] = [
    { role: "user", content: "list the files" },
    { role: "assistant", content: "", tool_calls: [{ id: "c1", type: "function", function: { name: "list_dir", arguments: "{}" } }] },
    { role: "tool", tool_call_id: "c1", content: "a.txt" },
    { role: "assistant", content: "There is a.txt." },
    { role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png;base64,x" } }, { type: "text", text: "and" }, { type: "text", text: "this?" }] },
    { role: "assistant", content: "x".repeat(250) },
  ];

  it("shows the last messages you and the bot wrote, leaving out tool calls, results and empty ones", () => {
    expect(historyAnswer(chat, "")).toBe(["Last 4 message(s):", "👤 You: list the files", "🤖 Bot: There is a.txt.", "👤 You: and this?", `🤖 Bot: ${"x".repeat(200)}…`].join("\n"));
    expect(historyAnswer(chat, "2")).toBe(["Last 2 message(s):", "👤 You: and this?", `🤖 Bot: ${"x".repeat(200)}…`].join("\n"));
  });

  it("takes a count from 1 to 50, and says how to use it when it is not a number", () => {
    expect(historyAnswer(chat, "0").split("\n")[0]).toBe("Last 1 message(s):");
    const many = Array.from({ length: 60 }, (_, i) => ({ role: "user", content: `m${i}` }) as ChatMessage);
    expect(historyAnswer(many, "500").split("\n")).toHaveLength(51);
    expect(historyAnswer(chat, "five")).toBe("Usage: /history [count] — e.g. /history 5 (default: 10, max: 50)");
    expect(historyAnswer([], "")).toBe("No conversation history yet.");
  });

  it("/skill lists names and descriptions, no paths; none says so", () => {
    const text = skillsAnswer([
      { name: "weather", description: "Get current weather and forecasts" },
      { name: "cron", description: "Schedule recurring tasks" },
    ]);
    expect(text).toContain("Available skills (2):");
    expect(text).toContain("**weather** — Get current weather and forecasts");
    expect(text).toContain("**cron** — Schedule recurring tasks");
    expect(skillsAnswer([])).toBe("No skills available.");
  });
});
