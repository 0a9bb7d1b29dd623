import { describe, expect, it } from "vitest";
import { defaultConfig } from "../../src/config/schema.js";
import { createSystemPromptCache } from "../../src/context/system-prompt-cache.js";
import { createMemoryFiles } from "../../src/memory/files.js";
import { recentHistory } from "../../src/memory/recent.js";
import { useTempDirs } from "../helpers/tmp.js";

const sectionOf = (prompt: string) => {
  const at = prompt.indexOf("# Recent History");
  return at < 0 ? "" : prompt.slice(at);
};

describe("the system prompt's Recent History", () => {
  const tempDir = useTempDirs();

  // nanobot: tests/agent/test_memory_store.py test_prompt_history_filters_to_current_session
  it("holds only the current session's entries: not another chat's, not legacy ones without a session", async () => {
    const files = createMemoryFiles(await tempDir());
    await files.appendHistory({ content: "legacy entry without session" });
    await files.appendHistory({ content: "telegram entry", sessionKey: "telegram:chat-1" });
    await files.appendHistory({ content: "slack entry", sessionKey: "slack:chat-2" });
    expect((await recentHistory(files, "telegram:chat-1")).map((e) => e.content)).toEqual(["telegram entry"]);
    expect((await recentHistory(files, "cli:direct")).map((e) => e.content)).toEqual([]);
    // Dream still digests every entry.
    expect((await files.undigested()).map((e) => e.content)).toEqual(["legacy entry without session", "telegram entry", "slack entry"]);
  });

  it("is built per session from one cached read: one chat's summary never reaches another session's prompt", async () => {
    const ws = await tempDir();
    const files = createMemoryFiles(ws);
    await files.appendHistory({ content: "User alice told me her bank PIN is 4821", sessionKey: "telegram:111" });
    await files.appendHistory({ content: "cron did its job", sessionKey: "cron:job-1" });
    const cache = createSystemPromptCache({ config: defaultConfig(), workspace: ws, files, now: Date.now });
    const prompt = await cache.get();
    expect(prompt.promptFor("cli:direct")).not.toContain("4821");
    expect(prompt.promptFor("cli:direct")).not.toContain("# Recent History");
    expect(prompt.promptFor("telegram:222")).not.toContain("4821");
    expect(prompt.promptFor("cron:job-1")).not.toContain("4821");
    expect(sectionOf(prompt.promptFor("telegram:111"))).toMatch(/^# Recent History\n\n- \[[^\]]+\] User alice told me her bank PIN is 4821$/);
    expect(sectionOf(prompt.promptFor("cron:job-1"))).toContain("cron did its job");
    // The part before the history is the same for every session (providers cache it).
    const head = (key: string) => prompt.promptFor(key).split("\n\n---\n\n# Recent History")[0];
    expect(head("telegram:111")).toBe(prompt.promptFor("cli:direct"));
    expect(head("cron:job-1")).toBe(prompt.promptFor("cli:direct"));
  });
});
