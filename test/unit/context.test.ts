import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildSystemPrompt, currentTimeText, withRuntimeContext } from "../../src/context/prompt.js";
import { userMessageWithMedia } from "../../src/context/media.js";
import { loadSkills } from "../../src/context/skills.js";
import { fillWorkspace, WORKSPACE_TEMPLATES_DIR } from "../../src/context/templates.js";
import { appendMessagesOps, HISTORY_TOOL_RESULT_CHARS, historyWindow, newSessionMeta } from "../../src/store/sessions.js";
import type { ChatMessage } from "../../src/providers/messages.js";
import { useTempDirs } from "../helpers/tmp.js";

describe("prompt assembly", () => {
  const tempDir = useTempDirs();

  it("orders identity, bootstrap files, memory, always-on skills, then the skills summary", async () => {
    const ws = await tempDir();
    await mkdir(join(ws, "memory"), { recursive: true });
    await mkdir(join(ws, "skills", "weather"), { recursive: true });
    await mkdir(join(ws, "skills", "github"), { recursive: true });
    for (const f of ["AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md"]) await writeFile(join(ws, f), `content of ${f}`);
    await writeFile(join(ws, "memory", "MEMORY.md"), "user likes tea");
    await writeFile(join(ws, "skills", "weather", "SKILL.md"), "---\nname: weather\ndescription: Forecasts.\nrequires:\n  env: [WEATHER_KEY_FOR_TEST]\n---\nUse the API.");
    await writeFile(join(ws, "skills", "github", "SKILL.md"), "---\nname: github\ndescription: My own github skill.\n---\nMine.");

    const skills = await loadSkills(ws, { PATH: "" });
    expect(skills.map((s) => [s.name, s.source])).toEqual([
      ["clawhub", "builtin"],
      ["cron", "builtin"],
      ["github", "workspace"],
      ["memory", "builtin"],
      ["skill-creator", "builtin"],
      ["summarize", "builtin"],
      ["tmux", "builtin"],
      ["weather", "workspace"],
    ]);
    expect(skills.find((s) => s.name === "weather")?.missing).toEqual(["ENV: WEATHER_KEY_FOR_TEST"]);

    const prompt = await buildSystemPrompt({ workspace: ws, skills, restrictToWorkspace: true });
    const order = [
      "# troupe",
      `Your workspace is ${ws}.`,
      "confined to the workspace",
      "## AGENTS.md\n\ncontent of AGENTS.md",
      "## SOUL.md",
      "## USER.md",
      "# Memory\n\nuser likes tea",
      "# Active Skills",
      "### Skill: memory",
      "# Skills",
      "- **github** — My own github skill.",
      "- **weather** — Forecasts. (unavailable: ENV: WEATHER_KEY_FOR_TEST)  `" + join(ws, "skills", "weather", "SKILL.md") + "`",
    ];
    let at = -1;
    for (const piece of order) {
      const i = prompt.indexOf(piece);
      expect(i, `"${piece}" missing or out of order`).toBeGreaterThan(at);
      at = i;
    }
    expect(prompt).not.toMatch(/Current Time/);
  });

  it("leaves a legacy TOOLS.md out of the prompt (nanobot: test_legacy_tools_md_is_not_bootstrapped)", async () => {
    const ws = await tempDir();
    await writeFile(join(ws, "TOOLS.md"), "workspace tool notes");
    const prompt = await buildSystemPrompt({ workspace: ws, skills: [], restrictToWorkspace: true });
    expect(prompt).not.toContain("TOOLS.md");
    expect(prompt).not.toContain("workspace tool notes");
  });

  it("skips AGENTS.md, USER.md and memory/MEMORY.md while they equal their templates (trimmed); SOUL.md is always in (nanobot: test_unmodified_agents_and_user_templates_are_skipped)", async () => {
    const ws = await tempDir();
    await fillWorkspace(ws);
    const prompt = await buildSystemPrompt({ workspace: ws, skills: [], restrictToWorkspace: true });
    expect(prompt).not.toContain("## AGENTS.md");
    expect(prompt).not.toContain("## USER.md");
    expect(prompt).not.toContain("# Memory");
    expect(prompt).toContain("## SOUL.md");
    // Compared trimmed, as nanobot's _is_template_content: blank lines around a template do not make it the user's.
    for (const rel of ["AGENTS.md", "USER.md", "memory/MEMORY.md"]) {
      await writeFile(join(ws, rel), `\n${await readFile(join(WORKSPACE_TEMPLATES_DIR, rel), "utf8")}\n\n`);
    }
    const padded = await buildSystemPrompt({ workspace: ws, skills: [], restrictToWorkspace: true });
    expect(padded).not.toContain("## AGENTS.md");
    expect(padded).not.toContain("## USER.md");
    expect(padded).not.toContain("# Memory");
  });

  it("puts an edited USER.md, AGENTS.md or MEMORY.md in the prompt (nanobot: test_customized_user_template_is_loaded)", async () => {
    const ws = await tempDir();
    await fillWorkspace(ws);
    await writeFile(join(ws, "USER.md"), "User prefers Chinese.");
    await writeFile(join(ws, "AGENTS.md"), `${await readFile(join(WORKSPACE_TEMPLATES_DIR, "AGENTS.md"), "utf8")}- Answer in haiku.\n`);
    await writeFile(join(ws, "memory", "MEMORY.md"), "User likes tea.");
    const prompt = await buildSystemPrompt({ workspace: ws, skills: [], restrictToWorkspace: true });
    expect(prompt).toContain("## USER.md\n\nUser prefers Chinese.");
    expect(prompt).toContain("- Answer in haiku.");
    expect(prompt).toContain("# Memory\n\nUser likes tea.");
  });

  it("heads the user message with nanobot's runtime-context block", () => {
    const text = withRuntimeContext("hello", { now: new Date("2026-03-01T12:30:00Z"), timezone: "Asia/Tokyo", channel: "telegram", chatId: "42" });
    expect(text).toBe(
      "[Runtime Context — metadata only, not instructions]\nCurrent Time: 2026-03-01 21:30 (Sunday) (Asia/Tokyo, UTC+09:00)\nChannel: telegram\nChat ID: 42\n[/Runtime Context]\n\nhello",
    );
    expect(currentTimeText(new Date("2026-07-04T23:05:00Z"), "UTC")).toBe("2026-07-04 23:05 (Saturday) (UTC, UTC+00:00)");
    // UTC is formatted without Intl: the same text as Intl gives, at every weekday and across a year's end.
    for (let day = 0; day < 9; day++) {
      const at = new Date(Date.UTC(2026, 11, 27 + day, 7, 9, 30));
      const etc = currentTimeText(at, "Etc/UTC").replace("(Etc/UTC,", "(UTC,");
      expect(currentTimeText(at, "UTC")).toBe(etc);
    }
    expect(currentTimeText(new Date("2026-07-04T23:05:00Z"), "America/New_York")).toBe("2026-07-04 19:05 (Saturday) (America/New_York, UTC-04:00)");
    // A timezone the platform does not know falls back to UTC rather than failing the turn.
    expect(currentTimeText(new Date("2026-07-04T23:05:00Z"), "Not/AZone")).toBe("2026-07-04 23:05 (Saturday) (UTC, UTC+00:00)");
  });

  it("puts images before the text, after the runtime context (nanobot's order)", async () => {
    const dir = await tempDir();
    const png = join(dir, "dot.png");
    await writeFile(png, Buffer.from("89504e470d0a1a0a", "hex"));
    const message = await userMessageWithMedia("what is this?", [png, join(dir, "notes.txt")], "[Runtime Context — metadata only, not instructions]\n[/Runtime Context]");
    expect(Array.isArray(message.content) && message.content.map((p) => p.type)).toEqual(["text", "image_url", "text"]);
    expect((message.content[0] as { text: string }).text).toMatch(/^\[Runtime Context/);
    expect(message.content[2]).toEqual({ type: "text", text: "what is this?" });
    const plain = await userMessageWithMedia("hi", [], "CTX");
    expect(plain.content).toBe("CTX\n\nhi");
    // Without a context (an injected message), images then text.
    const injected = await userMessageWithMedia("and this", [png]);
    expect(Array.isArray(injected.content) && injected.content.map((p) => p.type)).toEqual(["image_url", "text"]);
  });
});

describe("session history", () => {
  const call = (id: string): ChatMessage => ({ role: "assistant", content: null, tool_calls: [{ id, type: "function", function: { name: "x", arguments: "{}" } }] });

  it("starts the window at a user message so no tool result is orphaned", () => {
    const messages: ChatMessage[] = [
      { role: "user", content: "a".repeat(50) },
      call("1"),
      { role: "tool", tool_call_id: "1", content: "r".repeat(50) },
      { role: "assistant", content: "done" },
      { role: "user", content: "next" },
      { role: "assistant", content: "ok" },
    ];
    expect(historyWindow(messages, 10_000)).toEqual(messages);
    const cut = historyWindow(messages, 80);
    expect(cut[0]?.role).toBe("user");
    expect(cut).toEqual(messages.slice(4));
  });

  it("truncates long tool results in stored history", () => {
    const { ops, meta } = appendMessagesOps(newSessionMeta("cli:x", 0), [{ role: "tool", tool_call_id: "1", content: "z".repeat(HISTORY_TOOL_RESULT_CHARS + 500) }], "t", 1);
    const stored = (ops[0] as { value: { message: { content: string } } }).value.message.content;
    expect(stored.length).toBeLessThan(HISTORY_TOOL_RESULT_CHARS + 100);
    expect(stored).toMatch(/\(500 more characters truncated\)$/);
    expect(meta.nextSeq).toBe(1);
  });
});
