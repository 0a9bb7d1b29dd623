import { describe, expect, it } from "vitest";
import { defaultConfig } from "../../src/config/schema.js";
import { buildSystemPrompt } from "../../src/context/prompt.js";
import { createSystemPromptCache } from "../../src/context/system-prompt-cache.js";
import { createMemoryFiles } from "../../src/memory/files.js";
import { recentFor } from "../../src/memory/recent.js";
import { textTokens } from "../../src/memory/tokens.js";
import { useTempDirs } from "../helpers/tmp.js";

/** nanobot's ContextBuilder._MAX_HISTORY_TOKENS. */
const CAP = 8_000;
/** An entry of `words` words (about two tokens each), distinct from every other entry. */
const bigEntry = (i: number, words: number) => ({ timestamp: `2026-01-01 10:${String(i).padStart(2, "0")}`, content: `entry-${i}-start ${Array.from({ length: words }, (_, w) => `w${(w * 7 + i) % 97}`).join(" ")} entry-${i}-end` });

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
    expect((recentFor(await files.undigested(), "telegram:chat-1")).map((e) => e.content)).toEqual(["telegram entry"]);
    expect((recentFor(await files.undigested(), "cli:direct")).map((e) => e.content)).toEqual([]);
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

  // nanobot: ContextBuilder.build_system_prompt caps the section at _MAX_HISTORY_TOKENS (8,000); troupe keeps the newest.
  it("stays within 8,000 tokens however large the entries are, and keeps the newest entries whole", async () => {
    const ws = await tempDir();
    const entries = Array.from({ length: 50 }, (_, i) => bigEntry(i, 1_500));
    // Two of them fit, three do not.
    expect(textTokens(entries[0]!.content) * 3).toBeGreaterThan(CAP);
    expect(textTokens(entries[0]!.content) * 2).toBeLessThan(CAP - 100);
    const section = sectionOf(await buildSystemPrompt({ workspace: ws, skills: [], restrictToWorkspace: true, recentHistory: entries }));
    expect(textTokens(section)).toBeLessThanOrEqual(CAP);
    expect(section).toMatch(/^# Recent History\n\n/);
    for (const i of [48, 49]) expect(section).toContain(`- [${entries[i]!.timestamp}] ${entries[i]!.content}`);
    expect(section.indexOf("entry-48-start")).toBeLessThan(section.indexOf("entry-49-start"));
    for (const i of [0, 25, 47]) expect(section).not.toContain(`entry-${i}-start`);
    // It counts this chat's entries and does not send the model to the file that holds every chat's.
    expect(section).toContain("\n- (48 older entries of this chat left out to keep this section within 8000 tokens)\n");
    expect(section).not.toContain("history.jsonl");
  });

  it("cuts a newest entry that alone is over the cap to its head, marked as truncated", async () => {
    const ws = await tempDir();
    const entries = [bigEntry(1, 100), bigEntry(2, 20_000)];
    const section = sectionOf(await buildSystemPrompt({ workspace: ws, skills: [], restrictToWorkspace: true, recentHistory: entries }));
    expect(textTokens(section)).toBeLessThanOrEqual(CAP);
    expect(textTokens(section)).toBeGreaterThan(CAP / 2);
    expect(section).toContain(`- [${entries[1]!.timestamp}] entry-2-start w2 w9`);
    expect(section).not.toContain("entry-2-end");
    expect(section).not.toContain("entry-1-start");
    expect(section).toContain("- (1 older entry of this chat left out to keep this section within 8000 tokens)\n");
    expect(section).toMatch(/\n\.\.\. \(truncated\)$/);
  });

  it("leaves a section within the cap as it is", async () => {
    const ws = await tempDir();
    const entries = Array.from({ length: 3 }, (_, i) => bigEntry(i, 50));
    const section = sectionOf(await buildSystemPrompt({ workspace: ws, skills: [], restrictToWorkspace: true, recentHistory: entries }));
    expect(section).toBe(`# Recent History\n\n${entries.map((e) => `- [${e.timestamp}] ${e.content}`).join("\n")}`);
  });
});
