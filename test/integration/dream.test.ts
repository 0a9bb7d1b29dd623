import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import * as fs from "node:fs";
import git from "isomorphic-git";
import { describe, expect, it } from "vitest";
import { createActor, waitFor } from "xstate";
import { createDreamLogic, directDreamControl } from "../../actors/dream.js";
import { dreamCommand } from "../../src/memory/commands.js";
import { createDream, dreamWritable } from "../../src/memory/dream.js";
import { readDreamRecord, type DreamRecord } from "../../src/memory/dream-record.js";
import { createMemoryFiles } from "../../src/memory/files.js";
import { memoryLog } from "../../src/memory/git.js";
import type { Store } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi, type RecordedRequest } from "../fixtures/fake-openai.js";
import { countingTools, turnDeps } from "../helpers/turn-env.js";
import { useTempDirs } from "../helpers/tmp.js";
import { closeAfterEach } from "../helpers/teardown.js";

const phaseOf = (r: RecordedRequest) => {
  const system = String(r.body.messages[0]?.content);
  return system.includes("first phase: analysis") ? "analyse" : system.includes("second phase: editing") ? "edit" : "other";
};

/** A model that decides to note the cat, then writes it into MEMORY.md with edit_file. */
function dreamer(analysis = "memory/MEMORY.md: add: the user has a cat named Luna") {
  return startFakeOpenAi([], (r) => {
    if (phaseOf(r) === "analyse") return { content: analysis };
    const last = r.body.messages.at(-1)!;
    if (last.role === "tool") return { content: "Added the cat Luna to MEMORY.md" };
    return { toolCalls: [{ name: "edit_file", arguments: { path: "memory/MEMORY.md", old_text: "## Pets\n", new_text: "## Pets\n- Has a cat named Luna\n" } }] };
  });
}

describe("Dream", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let store: Store | undefined;
  closeAfterEach(() => [store, fake]);

  async function setup(model: Promise<FakeOpenAi>, entries = ["- [permanent] the user has a cat named Luna", "- [skip] said hello"], maxIterations = 10) {
    fake = await model;
    const ws = await tempDir();
    const deps = await turnDeps(ws, fake.url, countingTools().registry, false);
    store = deps.store;
    await mkdir(join(ws, "memory"), { recursive: true });
    await writeFile(join(ws, "memory", "MEMORY.md"), "# Long-term memory\n\n## Pets\n");
    await writeFile(join(ws, "USER.md"), "# User\n");
    const files = createMemoryFiles(ws);
    for (const content of entries) await files.appendHistory({ content, sessionKey: "cli:a" });
    let t = Date.UTC(2026, 3, 2, 10, 0);
    const dream = createDream({ store, provider: deps.provider, workspace: ws, files, settings: { intervalH: 2, maxBatchSize: 20, maxIterations }, now: () => (t += 1000) });
    return { ws, files, dream, control: directDreamControl(dream, ws) };
  }

  it("edits MEMORY.md from the history, advances .dream_cursor and commits the change", async () => {
    const { ws, files, control } = await setup(dreamer());
    const answer = await dreamCommand(control, "/dream");
    expect(answer).toMatch(/Added the cat Luna to MEMORY.md \(commit [0-9a-f]{7}; memory\/MEMORY.md: \+1 -0 lines\)/);
    expect(await readFile(join(ws, "memory", "MEMORY.md"), "utf8")).toContain("- Has a cat named Luna");
    expect(await files.dreamCursor()).toBe(2);
    // Phase 1 saw the history and the current files; phase 2 had only the three file tools.
    const analyse = fake!.requests.find((r) => phaseOf(r) === "analyse")!;
    expect(analyse.body.tools ?? []).toEqual([]);
    expect(String(analyse.body.messages[1]!.content)).toMatch(/\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}\] - \[permanent\] the user has a cat named Luna/);
    expect(String(analyse.body.messages[1]!.content)).toContain("### memory/MEMORY.md\n# Long-term memory");
    expect(fake!.requests.find((r) => phaseOf(r) === "edit")!.body.tools!.map((t) => t.function.name).sort()).toEqual(["edit_file", "read_file", "write_file"]);
    const log = await memoryLog(ws);
    expect(log[0]!.message).toMatch(/^dream: Added the cat Luna to MEMORY.md\n\nHistory entries 1–2 \(2\)\.\nmemory\/MEMORY.md: \+1 -0 lines$/);
    // The repository tracks only the three files.
    expect((await git.listFiles({ fs, dir: ws })).sort()).toEqual([".gitignore", "USER.md", "memory/MEMORY.md"]);
    // Nothing new: no model call, no commit.
    const calls = fake!.requests.length;
    expect(await control.run()).toBe("nothing new to digest");
    expect(fake!.requests.length).toBe(calls);
    expect((await memoryLog(ws)).length).toBe(log.length);
  });

  it("/dream-log lists the commits and shows one with its diff; /dream-restore puts the files back as a new commit", async () => {
    const { ws, control } = await setup(dreamer());
    await control.run();
    const list = (await dreamCommand(control, "/dream-log"))!;
    expect(list).toMatch(/^Recent memory commits/);
    const [dreamSha, firstSha] = [...list.matchAll(/^([0-9a-f]{7}) /gm)].map((m) => m[1]!);
    expect(list).toContain("dream: Added the cat Luna");
    const one = (await dreamCommand(control, `/dream-log ${dreamSha}`))!;
    expect(one).toContain("--- a/memory/MEMORY.md\n+++ b/memory/MEMORY.md");
    expect(one).toContain("+- Has a cat named Luna");
    const restored = (await dreamCommand(control, `/dream-restore ${firstSha}`))!;
    expect(restored).toMatch(new RegExp(`^Restored SOUL.md, USER.md and memory/MEMORY.md as of ${firstSha} \\(new commit [0-9a-f]{7}\\)\\.$`));
    expect(await readFile(join(ws, "memory", "MEMORY.md"), "utf8")).toBe("# Long-term memory\n\n## Pets\n");
    expect((await memoryLog(ws))[0]!.message).toBe(`memory: restore ${firstSha}`);
    // Without a sha: the Dream versions to choose from, with the next steps (not the restore commit or the first one).
    const choose = (await dreamCommand(control, "/dream-restore"))!;
    expect(choose).toMatch(new RegExp(`^## Dream Restore\n\nChoose a Dream memory version to restore\\. Latest first:\n\n- \`${dreamSha}\` \\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2} - dream: Added the cat Luna to MEMORY.md\n\n`));
    expect(choose).not.toContain("memory: restore");
    expect(choose).not.toContain(firstSha);
    expect(choose).toContain("Preview a version with `/dream-log <sha>` before restoring it.");
    expect(choose).toContain("Restore a version with `/dream-restore <sha>`");
    await expect(dreamCommand(control, "/dream-restore zzz")).rejects.toThrow(/not a commit sha/);
    await expect(dreamCommand(control, "/dream-log abcdef1")).rejects.toThrow(/no memory commit abcdef1/);
  });

  // nanobot v0.3.0 tests/command/test_builtin_dream.py test_dream_no_history_explains_how_to_create_input,
  // test_dream_log_before_first_run_is_clear, test_dream_log_without_saved_versions_mentions_prompt_command.
  it("before any Dream change, /dream, /dream-log and /dream-restore say why and what to do", async () => {
    const { control } = await setup(dreamer("(no changes)"), []);
    const nothing = (await dreamCommand(control, "/dream"))!;
    expect(nothing).toMatch(/^Dream has no conversation history to process yet\./);
    for (const hint of ["`memory/history.jsonl`", "Dream cursor", "/new", "agents.defaults.contextWindowTokens", "troupe memory show", "/dream-prompt"]) expect(nothing).toContain(hint);
    const log = (await dreamCommand(control, "/dream-log"))!;
    expect(log).toContain("Dream has not run yet.");
    expect(log).toContain("Run `/dream`");
    expect(log).toContain("/dream-prompt");
    expect(await dreamCommand(control, "/dream-restore")).toBe(log);
  });

  it("digests at most maxBatchSize entries a run", async () => {
    const { files, dream } = await setup(dreamer(), Array.from({ length: 25 }, (_, i) => `- [durable] fact ${i}`));
    await dream.runOnce();
    expect(await files.dreamCursor()).toBe(20);
    await dream.runOnce();
    expect(await files.dreamCursor()).toBe(25);
  });

  it("may write only the memory files and new skills that do not shadow existing ones", () => {
    const ws = "/w";
    expect(dreamWritable(ws, "memory/MEMORY.md", [], false)).toBeUndefined();
    expect(dreamWritable(ws, "/w/SOUL.md", [], true)).toBeUndefined();
    expect(dreamWritable(ws, "skills/deploy/SKILL.md", ["memory"], true)).toBeUndefined();
    expect(dreamWritable(ws, "memory/history.jsonl", [], false)).toMatch(/may only write/);
    expect(dreamWritable(ws, "AGENTS.md", [], true)).toMatch(/may only write/);
    expect(dreamWritable(ws, "../etc/SOUL.md", [], true)).toMatch(/may only write/);
    expect(dreamWritable(ws, "skills/memory/SKILL.md", ["memory"], true)).toMatch(/exists already/);
  });

  it("a refused write goes back to the model as a tool error and changes nothing", async () => {
    const { ws, dream } = await setup(
      startFakeOpenAi([], (r) => {
        if (phaseOf(r) === "analyse") return { content: "AGENTS.md: add: rule" };
        if (r.body.messages.at(-1)!.role === "tool") return { content: "could not write AGENTS.md" };
        return { toolCalls: [{ name: "write_file", arguments: { path: "AGENTS.md", content: "hacked" } }] };
      }),
      undefined,
      3,
    );
    await dream.runOnce();
    expect(existsSync(join(ws, "AGENTS.md"))).toBe(false);
    const toolResult = fake!.requests.at(-1)!.body.messages.at(-1)!;
    expect(String(toolResult.content)).toMatch(/^Error: Dream may only write SOUL.md, USER.md, memory\/MEMORY.md/);
  });

  describe("as an actor", () => {
    it("resumes an interrupted run at its stored phase (no second analysis), and commits once", async () => {
      const { ws, files, dream } = await setup(dreamer());
      // What a kill -9 in editing leaves: the run's record says editing, with the analysis made.
      const run = await dream.begin();
      const analysed = await dream.analyse(run!);
      expect((await readDreamRecord(store!))!.run!.phase).toBe("editing");
      const analyses = fake!.requests.filter((r) => phaseOf(r) === "analyse").length;
      const actor = createActor(createDreamLogic(dream), { input: {} }).start();
      const done = await waitFor(actor, (s) => s.context.runs > 0, { timeout: 20_000 });
      actor.stop();
      expect(done.value).toBe("idle");
      expect(done.context.lastResult).toMatch(/commit [0-9a-f]{7}/);
      expect(fake!.requests.filter((r) => phaseOf(r) === "analyse").length).toBe(analyses);
      expect(analysed.analysis).toContain("Luna");
      expect(await files.dreamCursor()).toBe(2);
      expect((await readFile(join(ws, "memory", "MEMORY.md"), "utf8")).match(/Luna/g)!.length).toBe(1);
      expect((await memoryLog(ws)).filter((c) => c.message.startsWith("dream:")).length).toBe(1);
    });

    it("a run interrupted after its commit, before the cursor moved, is not committed twice", async () => {
      const { ws, files, dream } = await setup(dreamer());
      let run = await dream.begin();
      run = await dream.analyse(run!);
      run = await dream.edit(run);
      // The commit lands, then the process dies: the record still says committing.
      const record = (await readDreamRecord(store!))!;
      await dream.commit(run);
      await store!.batch([{ type: "put", sublevel: "meta", key: "dream", value: record }], { sync: true });
      await files.setDreamCursor(0);
      await dream.runOnce();
      expect(await files.dreamCursor()).toBe(2);
      expect((await memoryLog(ws)).filter((c) => c.message.startsWith("dream:")).length).toBe(1);
    });

    it("runs by itself when its stored deadline has passed, and keeps the next deadline in LevelDB", async () => {
      const { files, dream } = await setup(dreamer("(no changes)"));
      const due: DreamRecord = { version: 1, nextAt: 0, run: null, lastRun: null };
      await store!.batch([{ type: "put", sublevel: "meta", key: "dream", value: due }], { sync: true });
      const actor = createActor(createDreamLogic(dream), { input: {} }).start();
      await waitFor(actor, (s) => s.context.runs > 0 && s.value === "idle", { timeout: 20_000 });
      actor.stop();
      // Nothing changed: the cursor stays and the batch waits for the next deadline (test/integration/dream-cursor.test.ts).
      expect(await files.dreamCursor()).toBe(0);
      const record = (await readDreamRecord(store!))!;
      expect(record.nextAt).toBeGreaterThan(Date.UTC(2026, 3, 2, 11, 59));
      expect(record.lastRun?.result).toBe("no memory file changed; history 1–2 stays undigested and is offered again at the next run (1 of 3)");
    });

    it("a failed phase leaves the run stored and waits for the retry or /dream", async () => {
      const { files, dream } = await setup(startFakeOpenAi([], () => ({ status: 400, errorMessage: "model is down" })));
      const actor = createActor(createDreamLogic(dream), { input: { retryMs: 60_000 } }).start();
      actor.send({ type: "run" });
      const failed = await waitFor(actor, (s) => s.context.runs > 0, { timeout: 20_000 });
      actor.stop();
      expect(failed.value).toBe("idle");
      expect(failed.context.lastResult).toMatch(/^Dream failed: .*model is down/);
      expect((await readDreamRecord(store!))!.run!.phase).toBe("analysing");
      expect(await files.dreamCursor()).toBe(0);
    });
  });
});
