import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Daemon } from "../../src/daemon-types.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { replyTo, sendApi, startDaemon } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";

describe("Dream in the daemon", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let daemon: Daemon | undefined;
  closeAfterEach(() => [daemon, fake]);

  it("is the supervisor's dream child; /dream runs it with modelOverride and answers when done", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "(no changes)" }));
    const dir = await tempDir();
    const ws = join(dir, "workspace");
    await mkdir(join(ws, "memory"), { recursive: true });
    await writeFile(join(ws, "memory/history.jsonl"), `${JSON.stringify({ cursor: 1, timestamp: "2026-04-01 10:00", content: "- [durable] a fact" })}\n`);
    daemon = await startDaemon(dir, fake.url, { defaults: { dream: { modelOverride: "dream-model" } } });
    const d = daemon;
    const node = await until(() => d.tree.tree()?.children.find((c) => c.id === "dream" && c.state === "idle"), 20_000, "Dream idle in the tree");
    expect(node.machine).toBe("dream");
    const id = await sendApi(d, "u1", "/dream");
    expect((await replyTo(d, id)).content).toBe("no memory file changed; history 1–1 stays undigested and is offered again at the next run (1 of 3)");
    expect(fake.requests.map((r) => r.body.model)).toEqual(["dream-model"]);
    const again = await sendApi(d, "u1", "/dream");
    expect((await replyTo(d, again)).content).toBe("no memory file changed; history 1–1 stays undigested and is offered again at the next run (2 of 3)");
    // /dream-prompt is a command answered at once, not a message for the model (nanobot: cmd_dream_prompt).
    const calls = fake.requests.length;
    expect((await replyTo(d, await sendApi(d, "u1", "/dream-prompt"))).content).toMatch(/^Dream memory instructions: troupe's default/);
    expect((await replyTo(d, await sendApi(d, "u1", "/help"))).content).toContain("/dream-prompt [init] — ");
    expect(fake.requests.length).toBe(calls);
  });
});
