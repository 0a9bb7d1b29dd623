import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createDream } from "../../src/memory/dream.js";
import { readDreamRecord } from "../../src/memory/dream-record.js";
import { createMemoryFiles } from "../../src/memory/files.js";
import { memoryLog } from "../../src/memory/git.js";
import type { Store } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi, type FakeStep, type RecordedRequest } from "../fixtures/fake-openai.js";
import { countingTools, turnDeps } from "../helpers/turn-env.js";
import { useTempDirs } from "../helpers/tmp.js";
import { closeAfterEach } from "../helpers/teardown.js";

const phaseOf = (r: RecordedRequest) => (String(r.body.messages[0]?.content).includes("first phase: analysis") ? "analyse" : "edit");

/**
 * When Dream moves .dream_cursor (nanobot v0.3.0: the cursor advances only when the run changed a
 * memory file, judged by the git diff; without git, when the run completed; never on a failed run:
 * tests/command/test_builtin_dream.py test_dream_advances_cursor_when_diff_nonempty,
 * test_dream_keeps_cursor_on_completed_noop, test_dream_non_git_falls_back_to_completion_gate).
 */
describe("Dream's cursor", () => {
  const tempDir = useTempDirs();
  const open: Array<FakeOpenAi | Store> = [];
  let store: Store | undefined;
  let fake: FakeOpenAi | undefined;
  closeAfterEach(() => open.splice(0));

  async function setup(reply: (r: RecordedRequest) => FakeStep, maxIterations = 5) {
    fake = await startFakeOpenAi([], reply);
    const ws = await tempDir();
    const deps = await turnDeps(ws, fake.url, countingTools().registry, false);
    store = deps.store;
    open.push(fake, store);
    await mkdir(join(ws, "memory"), { recursive: true });
    await writeFile(join(ws, "memory", "MEMORY.md"), "# Long-term memory\n");
    const files = createMemoryFiles(ws);
    for (const content of ["- [durable] the user likes tea", "- [skip] said hello"]) await files.appendHistory({ content, sessionKey: "cli:a" });
    let t = Date.UTC(2026, 3, 2, 10, 0);
    const dream = createDream({ store, provider: deps.provider, workspace: ws, files, settings: { intervalH: 2, maxBatchSize: 20, maxIterations }, now: () => (t += 1000) });
    return { ws, files, dream };
  }

  it("stays where it was when a completed run changed no file, and the batch is offered again", async () => {
    const { ws, files, dream } = await setup(() => ({ content: "(no changes)" }));
    expect(await dream.runOnce()).toBe("no memory file changed; history 1–2 stays undigested and is offered again at the next run (1 of 3)");
    expect(await files.dreamCursor()).toBe(0);
    expect((await memoryLog(ws)).filter((c) => c.message.startsWith("dream:"))).toEqual([]);
    // The run ended: the next one is scheduled, not started at once (no loop on the same entries).
    const record = (await readDreamRecord(store!))!;
    expect(record.run).toBeNull();
    expect(record.nextAt).toBeGreaterThan(Date.UTC(2026, 3, 2, 11, 59));
    expect(fake!.requests.map(phaseOf)).toEqual(["analyse"]);
    // The next run looks at the same entries again.
    await dream.runOnce();
    const offered = fake!.requests.filter((r) => phaseOf(r) === "analyse").map((r) => String(r.body.messages[1]!.content));
    expect(offered).toHaveLength(2);
    expect(offered[1]).toContain("the user likes tea");
    expect(await files.dreamCursor()).toBe(0);
  });

  it("stays when the editing phase ended without an edit, and when it stopped at maxIterations", async () => {
    const { files, dream } = await setup((r) => (phaseOf(r) === "analyse" ? { content: "USER.md: add: likes tea" } : { content: "Nothing needed after all" }));
    expect(await dream.runOnce()).toMatch(/^no memory file changed; history 1–2 stays undigested/);
    expect(await files.dreamCursor()).toBe(0);
    const looping = await setup((r) => (phaseOf(r) === "analyse" ? { content: "USER.md: add: likes tea" } : { toolCalls: [{ name: "read_file", arguments: { path: "USER.md" } }] }), 2);
    expect(await looping.dream.runOnce()).toMatch(/^stopped after 2 rounds; no memory file changed; history 1–2 stays undigested/);
    expect(await looping.files.dreamCursor()).toBe(0);
  });

  it("advances when a memory file changed", async () => {
    const { files, dream } = await setup((r) => {
      if (phaseOf(r) === "analyse") return { content: "USER.md: add: likes tea" };
      if (r.body.messages.at(-1)!.role === "tool") return { content: "Noted the tea" };
      return { toolCalls: [{ name: "write_file", arguments: { path: "USER.md", content: "# User\n\n- Likes tea\n" } }] };
    });
    expect(await dream.runOnce()).toMatch(/^Noted the tea \(commit [0-9a-f]{7}; USER\.md: created, \+3 -0 lines\)$/);
    expect(await files.dreamCursor()).toBe(2);
  });

  it("takes a batch as digested after three runs in a row changed nothing, so it cannot hold Dream up for ever", async () => {
    const { files, dream } = await setup(() => ({ content: "(no changes)" }));
    await dream.runOnce();
    await dream.runOnce();
    expect(await files.dreamCursor()).toBe(0);
    expect(await dream.runOnce()).toBe("no memory file changed in 3 runs; history 1–2 taken as digested");
    expect(await files.dreamCursor()).toBe(2);
    expect((await readDreamRecord(store!))!.unchanged ?? null).toBeNull();
  });

  it("without a usable memory git history, advances when the run completed (nanobot's non-git fallback)", async () => {
    const { ws, files, dream } = await setup(() => ({ content: "(no changes)" }));
    // A .git that is not a repository: Dream cannot diff or commit.
    await writeFile(join(ws, ".git"), "not a repository\n");
    expect(await dream.runOnce()).toMatch(/^digested history 1–2 \(the memory git history is unusable: .+; nothing committed\)$/);
    expect(await files.dreamCursor()).toBe(2);
  });

  it("without a usable memory git history, stays when the run stopped at maxIterations", async () => {
    const { ws, files, dream } = await setup((r) => (phaseOf(r) === "analyse" ? { content: "USER.md: add: likes tea" } : { toolCalls: [{ name: "read_file", arguments: { path: "USER.md" } }] }), 2);
    await writeFile(join(ws, ".git"), "not a repository\n");
    expect(await dream.runOnce()).toMatch(/^stopped after 2 rounds \(the memory git history is unusable: .+\); history 1–2 stays undigested/);
    expect(await files.dreamCursor()).toBe(0);
  });

  it("a Dream record that does not read is replaced by a new one: the run goes on (it held no cursor)", async () => {
    const { files, dream } = await setup(() => ({ content: "(no changes)" }));
    await store!.batch([{ type: "put", sublevel: "meta", key: "dream", value: { version: 1, nextAt: "soon" } }], { sync: true });
    await expect(readDreamRecord(store!)).rejects.toThrow(/record meta\/dream does not match its schema/);
    expect(await dream.runOnce()).toMatch(/^no memory file changed/);
    expect((await readDreamRecord(store!))!.lastRun).not.toBeNull();
    expect(await files.dreamCursor()).toBe(0);
  });
});
