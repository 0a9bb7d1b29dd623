import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { isAbsolute, join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { fillWorkspace, WORKSPACE_TEMPLATE_FILES, WORKSPACE_TEMPLATES_DIR } from "../../src/context/templates.js";
import { useTempDirs } from "../helpers/tmp.js";

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) if (e.isFile()) out.push(relative(dir, join(e.parentPath, e.name)));
  return out.sort();
}

/** nanobot's TestSyncWorkspaceTemplates (tests/agent/test_onboard_logic.py), on troupe's templates. */
describe("fillWorkspace (nanobot's sync_workspace_templates)", () => {
  const tmp = useTempDirs();

  it("names every file of templates/workspace (the list spares `troupe agent` a directory read)", async () => {
    expect([...WORKSPACE_TEMPLATE_FILES].sort()).toEqual(await filesUnder(WORKSPACE_TEMPLATES_DIR));
  });

  it("creates the missing files in a workspace that does not exist yet, with memory/ and skills/, and says which (relative paths)", async () => {
    const workspace = join(await tmp(), "workspace");
    const r = await fillWorkspace(workspace);
    expect(r.created).toEqual([...WORKSPACE_TEMPLATE_FILES, "memory/history.jsonl"]);
    expect(r.kept).toEqual([]);
    for (const rel of r.created) expect(isAbsolute(rel)).toBe(false);
    for (const rel of WORKSPACE_TEMPLATE_FILES) expect(await readFile(join(workspace, rel), "utf8")).toBe(await readFile(join(WORKSPACE_TEMPLATES_DIR, rel), "utf8"));
    expect(await readFile(join(workspace, "memory/history.jsonl"), "utf8")).toBe("");
    expect(existsSync(join(workspace, "skills"))).toBe(true);
    // nanobot 0.3 ships no TOOLS.md and reads none into the prompt.
    expect(existsSync(join(workspace, "TOOLS.md"))).toBe(false);
  });

  it("does not overwrite existing files (AGENTS.md, a legacy TOOLS.md, a history with entries)", async () => {
    const workspace = await tmp();
    await mkdir(join(workspace, "memory"));
    await writeFile(join(workspace, "AGENTS.md"), "existing content");
    await writeFile(join(workspace, "TOOLS.md"), "custom tool notes");
    await writeFile(join(workspace, "memory/history.jsonl"), '{"cursor":1}\n');
    const r = await fillWorkspace(workspace);
    expect(r.kept).toEqual(["AGENTS.md", "memory/history.jsonl"]);
    expect(r.created).toEqual(["HEARTBEAT.md", "SOUL.md", "USER.md", "memory/MEMORY.md"]);
    expect(await readFile(join(workspace, "AGENTS.md"), "utf8")).toBe("existing content");
    expect(await readFile(join(workspace, "TOOLS.md"), "utf8")).toBe("custom tool notes");
    expect(await readFile(join(workspace, "memory/history.jsonl"), "utf8")).toBe('{"cursor":1}\n');
  });

  it("a full workspace: nothing created, nothing changed", async () => {
    const workspace = await tmp();
    await fillWorkspace(workspace);
    await writeFile(join(workspace, "SOUL.md"), "mine");
    const r = await fillWorkspace(workspace);
    expect(r.created).toEqual([]);
    expect(await readFile(join(workspace, "SOUL.md"), "utf8")).toBe("mine");
  });
});
