import { existsSync } from "node:fs";
import { mkdir, readFile, stat, writeFile, appendFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildSystemPrompt } from "../../src/context/prompt.js";
import { loadSkills } from "../../src/context/skills.js";
import { createMemoryFiles } from "../../src/memory/files.js";
import { historyTimestamp, parseHistory } from "../../src/memory/history-entry.js";
import { recentFor } from "../../src/memory/recent.js";
import { useTempDirs } from "../helpers/tmp.js";

const at = Date.UTC(2026, 3, 2, 10, 7);

describe("memory files (nanobot's layout)", () => {
  const tempDir = useTempDirs();

  it("appends entries with increasing cursors, nanobot's timestamp and the session key, and keeps .cursor", async () => {
    const ws = await tempDir();
    const files = createMemoryFiles(ws, { now: () => at });
    expect(await files.appendHistory({ content: "first  \n" })).toBe(1);
    expect(await files.appendHistory({ content: "second", sessionKey: "telegram:1" })).toBe(2);
    const lines = (await readFile(join(ws, "memory", "history.jsonl"), "utf8")).trim().split("\n").map((l) => JSON.parse(l) as unknown);
    expect(lines).toEqual([
      { cursor: 1, timestamp: "2026-04-02 10:07", content: "first" },
      { cursor: 2, timestamp: "2026-04-02 10:07", content: "second", session_key: "telegram:1" },
    ]);
    expect((await readFile(join(ws, "memory", ".cursor"), "utf8")).trim()).toBe("2");
    expect(await files.latestCursor()).toBe(2);
  });

  it("hands out unique cursors to concurrent appends", async () => {
    const files = createMemoryFiles(await tempDir());
    const cursors = await Promise.all(Array.from({ length: 20 }, (_, i) => files.appendHistory({ content: `e${i}` })));
    expect(new Set(cursors).size).toBe(20);
    expect((await files.readHistory()).map((e) => e.cursor)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });

  it("continues after an existing history.jsonl's last cursor, and after a torn last line", async () => {
    const ws = await tempDir();
    await mkdir(join(ws, "memory"));
    await writeFile(join(ws, "memory", "history.jsonl"), '{"cursor": 7, "timestamp": "2026-04-01 12:00", "content": "existing"}\n{"cursor": 8, "timest');
    const files = createMemoryFiles(ws);
    expect(await files.appendHistory({ content: "after the crash" })).toBe(8);
    expect((await files.readHistory()).map((e) => [e.cursor, e.content])).toEqual([
      [7, "existing"],
      [8, "after the crash"],
    ]);
  });

  it("skips malformed lines and entries without a cursor", () => {
    const text = ['{"timestamp": "t", "content": "no cursor"}', "not json", '{"cursor": -1, "timestamp": "t", "content": "x"}', '{"cursor": 3, "timestamp": "t", "content": "ok"}'].join("\n");
    expect(parseHistory(text).map((e) => e.cursor)).toEqual([3]);
  });

  it("caps history at the limit by dropping the oldest digested entries, never undigested ones", async () => {
    const ws = await tempDir();
    const files = createMemoryFiles(ws, { maxEntries: 5 });
    for (let i = 0; i < 8; i++) await files.appendHistory({ content: `e${i + 1}` });
    // Nothing digested yet: all 8 kept (dropping them would lose them before Dream saw them).
    expect((await files.readHistory()).length).toBe(8);
    await files.setDreamCursor(6);
    await files.appendHistory({ content: "e9" });
    expect((await files.readHistory()).map((e) => e.cursor)).toEqual([5, 6, 7, 8, 9]);
    expect((await files.undigested()).map((e) => e.cursor)).toEqual([7, 8, 9]);
  });

  it("appends after a history of 200,000 undigested entries (Dream digests 20 a run: a busy daemon's history outgrows the cap)", async () => {
    const ws = await tempDir();
    await mkdir(join(ws, "memory"), { recursive: true });
    const lines = Array.from({ length: 200_000 }, (_, i) => `{"cursor":${i + 1},"timestamp":"2026-11-24 11:20","content":"e"}`);
    await writeFile(join(ws, "memory", "history.jsonl"), `${lines.join("\n")}\n`);
    const files = createMemoryFiles(ws);
    // The next cursor was the largest of all entries' cursors, spread as arguments: past ~120,000 that threw.
    expect(await files.appendHistory({ content: "next" })).toBe(200_001);
    expect(await files.latestCursor()).toBe(200_001);
  });

  it("caps at 1000 entries by default", async () => {
    const ws = await tempDir();
    await mkdir(join(ws, "memory"));
    const lines = Array.from({ length: 1000 }, (_, i) => JSON.stringify({ cursor: i + 1, timestamp: "2026-04-01 12:00", content: `e${i + 1}` }));
    await writeFile(join(ws, "memory", "history.jsonl"), lines.join("\n") + "\n");
    await writeFile(join(ws, "memory", ".dream_cursor"), "1000");
    const files = createMemoryFiles(ws);
    await files.appendHistory({ content: "one more" });
    const entries = await files.readHistory();
    expect(entries.length).toBe(1000);
    expect(entries[0]!.cursor).toBe(2);
    expect(entries.at(-1)).toMatchObject({ cursor: 1001, content: "one more" });
  });

  describe("legacy HISTORY.md migration", () => {
    async function legacy(content: string, history?: string) {
      const ws = await tempDir();
      await mkdir(join(ws, "memory"));
      await writeFile(join(ws, "memory", "HISTORY.md"), content);
      if (history !== undefined) await writeFile(join(ws, "memory", "history.jsonl"), history);
      return { ws, files: createMemoryFiles(ws) };
    }

    it("migrates entries once, keeping partial ones, and marks them digested", async () => {
      const content =
        "[2026-04-01 10:00] User prefers dark mode.\n\n" +
        "[2026-04-01 10:05] [RAW] 2 messages\n[2026-04-01 10:04] USER: hello\n[2026-04-01 10:04] ASSISTANT: hi\n\n" +
        "Legacy chunk without timestamp.\nKeep whatever content we can recover.\n";
      const { ws, files } = await legacy(content);
      const entries = await files.readHistory();
      const fallback = historyTimestamp(new Date((await stat(join(ws, "memory", "HISTORY.md.bak"))).mtimeMs));
      expect(entries.map((e) => e.cursor)).toEqual([1, 2, 3]);
      expect(entries[0]).toMatchObject({ timestamp: "2026-04-01 10:00", content: "User prefers dark mode." });
      expect(entries[1]!.timestamp).toBe("2026-04-01 10:05");
      expect(entries[1]!.content).toMatch(/^\[RAW\] 2 messages/);
      expect(entries[1]!.content).toContain("USER: hello");
      expect(entries[2]!.timestamp).toBe(fallback);
      expect(entries[2]!.content).toMatch(/^Legacy chunk without timestamp\./);
      expect((await readFile(join(ws, "memory", ".cursor"), "utf8")).trim()).toBe("3");
      expect(await files.dreamCursor()).toBe(3);
      expect(existsSync(join(ws, "memory", "HISTORY.md"))).toBe(false);
      expect(await readFile(join(ws, "memory", "HISTORY.md.bak"), "utf8")).toBe(content);
      expect(await files.appendHistory({ content: "new" })).toBe(4);
    });

    it("splits consecutive dated lines, keeps a raw block whole, and dates odd headers with the file's time", async () => {
      const a = await legacy("[2026-04-01 10:00] First event.\n[2026-04-01 10:01] Second event.\n[2026-04-01 10:02] Third event.\n");
      expect((await a.files.readHistory()).map((e) => e.content)).toEqual(["First event.", "Second event.", "Third event."]);
      const b = await legacy("[2026-04-01 10:05] [RAW] 2 messages\n[2026-04-01 10:04] USER: hello\n[2026-04-01 10:04] ASSISTANT: hi\n[2026-04-01 10:06] Normal event after raw block.\n");
      const raw = await b.files.readHistory();
      expect(raw.length).toBe(2);
      expect(raw[1]!.content).toBe("Normal event after raw block.");
      const c = await legacy("[2026-03-25–2026-04-02] Multi-day summary.\n[2026-03-26/27] Cross-day summary.\n");
      expect((await c.files.readHistory()).map((e) => e.content)).toEqual(["[2026-03-25–2026-04-02] Multi-day summary.", "[2026-03-26/27] Cross-day summary."]);
    });

    it("leaves HISTORY.md alone when history.jsonl has entries, and migrates when it is empty", async () => {
      const kept = await legacy("[2026-04-01 10:00] legacy\n\n", '{"cursor": 7, "timestamp": "2026-04-01 12:00", "content": "existing"}\n');
      expect((await kept.files.readHistory()).map((e) => [e.cursor, e.content])).toEqual([[7, "existing"]]);
      expect(existsSync(join(kept.ws, "memory", "HISTORY.md"))).toBe(true);
      expect(existsSync(join(kept.ws, "memory", "HISTORY.md.bak"))).toBe(false);
      const empty = await legacy("[2026-04-01 10:00] legacy\n\n", "");
      expect((await empty.files.readHistory()).map((e) => [e.cursor, e.timestamp, e.content])).toEqual([[1, "2026-04-01 10:00", "legacy"]]);
    });
  });

  it("what it keeps after its own appends is what the file holds, with another writer's appends in between", async () => {
    const ws = await tempDir();
    const [a, b] = [createMemoryFiles(ws, { maxEntries: 6 }), createMemoryFiles(ws, { maxEntries: 6 })];
    const onDisk = async () => parseHistory(await readFile(join(ws, "memory", "history.jsonl"), "utf8"));
    for (let i = 0; i < 5; i++) {
      await a.appendHistory({ content: `a${i}`, sessionKey: "cli:a", archived: { epoch: 0, from: i, to: i + 1, createdAt: 1 } });
      expect(await a.readHistory()).toEqual(await onDisk());
      await b.appendHistory({ content: `b${i}` });
      expect(await a.readHistory()).toEqual(await onDisk());
      expect(await b.readHistory()).toEqual(await onDisk());
    }
    // Past the cap (nothing digested: every entry is kept), cursors still unique and in order.
    expect((await a.readHistory()).map((e) => e.cursor)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
  });

  it("re-reads history.jsonl changed by another writer", async () => {
    const ws = await tempDir();
    const files = createMemoryFiles(ws);
    await files.appendHistory({ content: "a" });
    expect((await files.readHistory()).length).toBe(1);
    await appendFile(join(ws, "memory", "history.jsonl"), JSON.stringify({ cursor: 2, timestamp: "t", content: "b" }) + "\n");
    expect((await files.readHistory()).length).toBe(2);
  });

  it("puts the entries after .dream_cursor, the last 50, in the system prompt's Recent History after the skills", async () => {
    const ws = await tempDir();
    const files = createMemoryFiles(ws, { now: () => at });
    for (let i = 1; i <= 70; i++) await files.appendHistory({ content: `fact ${i}`, sessionKey: "cli:direct" });
    await files.setDreamCursor(10);
    const recent = recentFor(await files.undigested(), "cli:direct");
    expect(recent.map((e) => e.cursor)).toEqual(Array.from({ length: 50 }, (_, i) => i + 21));
    const prompt = await buildSystemPrompt({ workspace: ws, skills: await loadSkills(ws, {}), restrictToWorkspace: true, recentHistory: recent });
    const section = prompt.slice(prompt.indexOf("# Recent History"));
    expect(section.split("\n").slice(0, 4)).toEqual(["# Recent History", "", "- [2026-04-02 10:07] fact 21", "- [2026-04-02 10:07] fact 22"]);
    expect(prompt.indexOf("# Recent History")).toBeGreaterThan(prompt.indexOf("# Active Skills"));
    // The memory skill is always loaded and says who owns the files.
    expect(prompt).toContain("### Skill: memory");
    expect(prompt).toMatch(/USER\.md` — the user's profile and preferences\. \*\*Managed by Dream\.\*\* Do not edit\./);
    await files.setDreamCursor(70);
    expect(recentFor(await files.undigested(), "cli:direct")).toEqual([]);
  });
});
