import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { directDreamControl } from "../../actors/dream.js";
import { TEMPLATES_DIR } from "../../src/context/templates.js";
import { dreamCommand } from "../../src/memory/commands.js";
import { createDream } from "../../src/memory/dream.js";
import { createMemoryFiles } from "../../src/memory/files.js";
import type { Store } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { countingTools, turnDeps } from "../helpers/turn-env.js";
import { useTempDirs } from "../helpers/tmp.js";
import { closeAfterEach } from "../helpers/teardown.js";

/**
 * /dream-prompt and the workspace's prompts/dream.md (nanobot v0.3.0: tests/command/test_builtin_dream.py
 * test_dream_prompt_reports_default_prompt, test_dream_prompt_init_copies_default_prompt,
 * test_dream_prompt_init_does_not_overwrite_existing_prompt, test_dream_prompt_init_recreates_empty_prompt;
 * tests/agent/test_dream.py test_workspace_dream_prompt_overrides_default,
 * test_workspace_dream_prompt_override_is_capped, test_empty_workspace_dream_prompt_uses_default).
 */
describe("/dream-prompt and prompts/dream.md", () => {
  const tempDir = useTempDirs();
  const open: Array<FakeOpenAi | Store> = [];
  let fake: FakeOpenAi | undefined;
  closeAfterEach(() => open.splice(0));

  async function setup() {
    fake = await startFakeOpenAi([], () => ({ content: "(no changes)" }));
    const ws = await tempDir();
    const deps = await turnDeps(ws, fake.url, countingTools().registry, false);
    const store = deps.store;
    open.push(store, fake);
    await mkdir(join(ws, "memory"), { recursive: true });
    const files = createMemoryFiles(ws);
    await files.appendHistory({ content: "- [durable] keep this fact", sessionKey: "cli:a" });
    const dream = createDream({ store, provider: deps.provider, workspace: ws, files, settings: { intervalH: 2, maxBatchSize: 20, maxIterations: 5 } });
    const control = directDreamControl(dream, ws);
    return { ws, dream, ask: async (text: string) => (await dreamCommand(control, text))! };
  }
  const defaultGuide = () => readFile(join(TEMPLATES_DIR, "prompts", "dream-analyse.md"), "utf8");
  const analysisSystem = () => String(fake!.requests[0]!.body.messages[0]!.content);

  it("reports the default instructions and how to change them, without the workspace's path", async () => {
    const { ws, ask } = await setup();
    const out = await ask("/dream-prompt");
    expect(out).toContain("Dream memory instructions: troupe's default");
    expect(out).toContain("`prompts/dream.md`");
    expect(out).toContain("/dream-prompt init");
    expect(out).not.toContain(ws);
  });

  it("init copies the default guide to prompts/dream.md; afterwards it is reported as custom", async () => {
    const { ws, ask } = await setup();
    const out = await ask("/dream-prompt init");
    expect(out).toContain("Created `prompts/dream.md`");
    expect(out).toContain("fully replaces troupe's default Dream guide");
    expect(out).not.toContain(ws);
    expect(await readFile(join(ws, "prompts", "dream.md"), "utf8")).toBe(`${(await defaultGuide()).trimEnd()}\n`);
    const status = await ask("/dream-prompt");
    expect(status).toContain("Dream memory instructions: custom for this workspace");
    expect(status).toContain("Delete or empty `prompts/dream.md`");
  });

  it("init does not overwrite a prompt that exists, and recreates an empty one", async () => {
    const { ws, ask } = await setup();
    await mkdir(join(ws, "prompts"));
    await writeFile(join(ws, "prompts", "dream.md"), "custom");
    const out = await ask("/dream-prompt init");
    expect(out).toContain("`prompts/dream.md` already exists");
    expect(out).not.toContain(ws);
    expect(await readFile(join(ws, "prompts", "dream.md"), "utf8")).toBe("custom");
    await writeFile(join(ws, "prompts", "dream.md"), "  \n");
    expect(await ask("/dream-prompt init")).toContain("Created `prompts/dream.md`");
    expect(await readFile(join(ws, "prompts", "dream.md"), "utf8")).toBe(`${(await defaultGuide()).trimEnd()}\n`);
  });

  it("says what is wrong with an unknown argument", async () => {
    const { ask } = await setup();
    expect(await ask("/dream-prompt reset")).toBe('/dream-prompt does not know "reset". Usage: /dream-prompt [init] (init makes an editable copy of the default in prompts/dream.md)');
  });

  it("a workspace prompts/dream.md replaces the default guide of the analysis", async () => {
    const { ws, dream } = await setup();
    await mkdir(join(ws, "prompts"));
    await writeFile(join(ws, "prompts", "dream.md"), "Custom Dream prompt.\n");
    await dream.runOnce();
    expect(analysisSystem()).toBe("Custom Dream prompt.");
    expect(analysisSystem()).not.toContain("first phase: analysis");
    const user = String(fake!.requests[0]!.body.messages[1]!.content);
    expect(user).toContain("## Conversation History");
    expect(user).toContain("keep this fact");
  });

  it("a prompts/dream.md over 32,000 characters is cut; an empty one means the default", async () => {
    const { ws, dream } = await setup();
    await mkdir(join(ws, "prompts"));
    await writeFile(join(ws, "prompts", "dream.md"), "x".repeat(40_000));
    await dream.runOnce();
    expect(analysisSystem()).not.toContain("x".repeat(40_000));
    expect(analysisSystem()).toMatch(/^x{32000}\n\.\.\. \(truncated\)$/);
    const empty = await setup();
    await mkdir(join(empty.ws, "prompts"));
    await writeFile(join(empty.ws, "prompts", "dream.md"), "  \n");
    await empty.dream.runOnce();
    expect(analysisSystem()).toBe(await defaultGuide());
  });
});
