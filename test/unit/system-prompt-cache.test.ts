import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { defaultConfig } from "../../src/config/schema.js";
import type { Skill } from "../../src/context/skills.js";
import { createSystemPromptCache } from "../../src/context/system-prompt-cache.js";
import { createMemoryFiles } from "../../src/memory/files.js";
import { useTempDirs } from "../helpers/tmp.js";

const early: Skill = { name: "early-bird", description: "Loaded before the store opened.", path: "/nowhere/SKILL.md", always: false, source: "workspace", missing: [], broken: [], warnings: [], body: "" };

describe("the system prompt's cache", () => {
  const tmp = useTempDirs();

  it("lists the skills its caller started loading early in its first build, and reads the workspace's afterwards", async () => {
    const workspace = await tmp();
    await mkdir(join(workspace, "skills", "late"), { recursive: true });
    await writeFile(join(workspace, "skills", "late", "SKILL.md"), "---\nname: late\ndescription: Read from the workspace.\n---\nbody\n");
    const cache = createSystemPromptCache({ config: defaultConfig(), workspace, files: createMemoryFiles(workspace), now: Date.now }, Promise.resolve([early]));
    const first = await cache.get();
    expect(first.skills.map((s) => s.name)).toEqual(["early-bird"]);
    expect(first.prompt).toContain("early-bird");
    cache.invalidate();
    const second = await cache.get();
    expect(second.skills.map((s) => s.name)).toContain("late");
    expect(second.skills.map((s) => s.name)).not.toContain("early-bird");
    expect(second.prompt).toContain("Read from the workspace.");
  });

  it("builds afresh when the early load failed", async () => {
    const workspace = await tmp();
    const cache = createSystemPromptCache({ config: defaultConfig(), workspace, files: createMemoryFiles(workspace), now: Date.now }, Promise.reject(new Error("disk gone")));
    await expect(cache.get()).rejects.toThrow("disk gone");
    const again = await cache.get();
    expect(again.skills.length).toBeGreaterThan(0);
  });
});
