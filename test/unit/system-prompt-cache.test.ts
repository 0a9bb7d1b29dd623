import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { defaultConfig } from "../../src/config/schema.js";
import type { Skill } from "../../src/context/skills.js";
import { fillWorkspace, WORKSPACE_TEMPLATES_DIR } from "../../src/context/templates.js";
import { createSystemPromptCache, PROMPT_TTL_MS, promptSkills } from "../../src/context/system-prompt-cache.js";
import { createMemoryFiles } from "../../src/memory/files.js";
import { useTempDirs } from "../helpers/tmp.js";

const early: Skill = { name: "early-bird", description: "Loaded before the store opened.", path: "/nowhere/SKILL.md", always: false, source: "workspace", missing: [], broken: [], warnings: [], body: "" };

const addSkill = async (workspace: string, name: string, description: string) => {
  await mkdir(join(workspace, "skills", name), { recursive: true });
  await writeFile(join(workspace, "skills", name, "SKILL.md"), `---\nname: ${name}\ndescription: ${description}\n---\nbody\n`);
};

describe("the system prompt's cache", () => {
  const tmp = useTempDirs();

  it("lists the skills its caller started loading early in its first build, and reads the workspace's afterwards", async () => {
    const workspace = await tmp();
    await addSkill(workspace, "late", "Read from the workspace.");
    const cache = createSystemPromptCache({ config: defaultConfig(), workspace, files: createMemoryFiles(workspace), now: Date.now }, { skills: Promise.resolve([early]), at: Date.now() });
    const first = await cache.get();
    expect(first.skills.map((s) => s.name)).toEqual(["early-bird"]);
    expect(first.promptFor("cli:direct")).toContain("early-bird");
    cache.invalidate();
    const second = await cache.get();
    expect(second.skills.map((s) => s.name)).toContain("late");
    expect(second.skills.map((s) => s.name)).not.toContain("early-bird");
    expect(second.promptFor("cli:direct")).toContain("Read from the workspace.");
  });

  it("puts USER.md in once it is edited and leaves it out again once it is back to its template", async () => {
    const workspace = await tmp();
    await fillWorkspace(workspace);
    let t = 0;
    const cache = createSystemPromptCache({ config: defaultConfig(), workspace, files: createMemoryFiles(workspace), now: () => t });
    expect((await cache.get()).promptFor("cli:direct")).not.toContain("## USER.md");
    await writeFile(join(workspace, "USER.md"), "User prefers Chinese.");
    t += PROMPT_TTL_MS;
    expect((await cache.get()).promptFor("cli:direct")).toContain("## USER.md\n\nUser prefers Chinese.");
    await writeFile(join(workspace, "USER.md"), await readFile(join(WORKSPACE_TEMPLATES_DIR, "USER.md"), "utf8"));
    t += PROMPT_TTL_MS;
    expect((await cache.get()).promptFor("cli:direct")).not.toContain("## USER.md");
  });

  it("reads the skills afresh when the early load is older than the prompt's lifetime (a daemon's first message hours after its start)", async () => {
    const workspace = await tmp();
    let t = 0;
    const config = defaultConfig();
    const loaded = { skills: promptSkills({ config, workspace }), at: t };
    await loaded.skills;
    t += 60 * 60_000;
    await addSkill(workspace, "late", "Added after start.");
    expect(t - loaded.at).toBeGreaterThan(PROMPT_TTL_MS);
    const cache = createSystemPromptCache({ config, workspace, files: createMemoryFiles(workspace), now: () => t }, loaded);
    expect((await cache.get()).skills.map((s) => s.name)).toContain("late");
  });

  it("loads the skills afresh when the early load failed", async () => {
    const workspace = await tmp();
    await addSkill(workspace, "late", "Read after the early load failed.");
    const failed = Promise.reject(new Error("disk gone"));
    failed.catch(() => undefined);
    const cache = createSystemPromptCache({ config: defaultConfig(), workspace, files: createMemoryFiles(workspace), now: Date.now }, { skills: failed, at: Date.now() });
    expect((await cache.get()).skills.map((s) => s.name)).toContain("late");
  });
});
