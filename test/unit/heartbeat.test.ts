import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { decideHeartbeat, hasActiveTasks, pickHeartbeatTarget } from "../../src/cron/heartbeat.js";
import type { LlmProvider } from "../../src/providers/client.js";
import type { ModelResponse } from "../../src/providers/messages.js";
import { newSessionMeta } from "../../src/store/sessions.js";

describe("heartbeat", () => {
  it("HEARTBEAT.md: the template, headings and comments hold no task; a line under Active Tasks does (nanobot's rule)", async () => {
    expect(hasActiveTasks(await readFile(new URL("../../templates/workspace/HEARTBEAT.md", import.meta.url), "utf8"))).toBe(false);
    expect(hasActiveTasks("")).toBe(false);
    expect(hasActiveTasks("# Tasks\n\n<!-- a\nmultiline comment -->\n## Active Tasks\n\n### sub\n")).toBe(false);
    expect(hasActiveTasks("## Active Tasks\n- check the oven\n")).toBe(true);
    expect(hasActiveTasks("## Done\n- old task\n## Active Tasks\n")).toBe(false);
    // Only "## Active Tasks" holds tasks: a file without that heading has none.
    expect(hasActiveTasks("- [ ] water the plants")).toBe(false);
  });

  // nanobot tests/cli/test_commands.py::test_heartbeat_has_active_tasks, every case.
  it.each([
    ["", false],
    ["# Title\n\n## Active Tasks\n", false],
    ["<!--\nmulti-line\ncomment\n-->\n", false],
    ["<!-- single line -->\n", false],
    ["## Active Tasks\n\n- water the plants\n", true],
    ["## Active Tasks\n\n### Garden\n\n- water the plants\n", true],
    ["## Notes\n\nsome random note\n", false],
    ["stray text before any heading\n## Active Tasks\n\n- task\n", true],
    ["stray text before any heading\n", false],
  ])("HEARTBEAT.md %j has active tasks: %s (nanobot's cases)", (content, expected) => {
    expect(hasActiveTasks(content)).toBe(expected);
  });

  const provider = (r: Partial<ModelResponse>): LlmProvider => ({
    name: "fake",
    model: "m",
    chat: async () => ({ content: "", toolCalls: [], finishReason: "stop", usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 }, ...r }),
  });
  const call = (args: Record<string, unknown> | null) => ({ toolCalls: [{ id: "c", name: "heartbeat", rawArguments: JSON.stringify(args), arguments: args }] });

  it("phase 1 reads the decision from the heartbeat tool only; free text or bad arguments are a skip", async () => {
    expect(await decideHeartbeat(provider(call({ action: "run", tasks: "check the oven" })), "x", "now")).toEqual({ action: "run", tasks: "check the oven" });
    expect(await decideHeartbeat(provider(call({ action: "skip" })), "x", "now")).toEqual({ action: "skip" });
    expect(await decideHeartbeat(provider({ content: "run: yes do it" }), "x", "now")).toMatchObject({ action: "skip", why: "the model did not call the heartbeat tool" });
    expect(await decideHeartbeat(provider(call({ action: "maybe" })), "x", "now")).toMatchObject({ action: "skip", why: "the heartbeat tool call had bad arguments" });
  });

  it("reports to the most recently active external chat, never to cron, heartbeat, subagent or cli sessions", () => {
    const at = (key: string, t: number) => ({ ...newSessionMeta(key, t), updatedAt: t });
    const sessions = [at("telegram:42", 1), at("cron:abc", 9), at("heartbeat", 8), at("subagent:x", 7), at("cli:direct", 6), at("telegram:7", 5)];
    expect(pickHeartbeatTarget(sessions, () => true)).toEqual({ channel: "telegram", chatId: "7" });
    expect(pickHeartbeatTarget(sessions, (c) => c !== "telegram")).toBeUndefined();
  });
});
