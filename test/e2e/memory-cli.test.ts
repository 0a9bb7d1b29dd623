import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startFakeOpenAi, type FakeOpenAi, type RecordedRequest } from "../fixtures/fake-openai.js";
import { writeHome } from "../helpers/daemon.js";
import { runCli } from "../helpers/cli.js";
import { startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { closeAfterEach } from "../helpers/teardown.js";

const isAnalysis = (r: RecordedRequest) => String(r.body.messages[0]?.content).includes("first phase: analysis");

describe("troupe memory show and troupe dream run|log|restore", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let gateway: GatewayProcess | undefined;
  closeAfterEach(() => [gateway, fake]);

  it("memory --help names the actions <action> takes, and a wrong one is refused naming them", async () => {
    const home = await tmp();
    const help = await runCli(["memory", "--help"], { TROUPE_HOME: home });
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Arguments:\n {2}action +show: .*\(choices: "show"\)/);
    const wrong = await runCli(["memory", "list"], { TROUPE_HOME: home });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain("error: command-argument value 'list' is invalid for argument 'action'. Allowed choices are show.");
  });

  it("shows the memory, runs Dream in process, lists and restores its commits; through the daemon too", { timeout: 120_000 }, async () => {
    fake = await startFakeOpenAi([], (r) => {
      if (isAnalysis(r)) return { content: "USER.md: add: prefers short replies" };
      if (r.body.messages.at(-1)!.role === "tool") return { content: "Noted the short replies" };
      return { toolCalls: [{ name: "write_file", arguments: { path: "USER.md", content: "# User\n\n- Prefers short replies\n" } }] };
    });
    const home = await tmp();
    await writeHome(home, fake.url, { config: { gateway: { port: 0 } } });
    const ws = join(home, "workspace");
    await mkdir(join(ws, "memory"), { recursive: true });
    await writeFile(join(ws, "USER.md"), "# User\n");
    // A nanobot workspace: the legacy HISTORY.md is migrated (and counts as digested), history.jsonl goes on from it.
    await writeFile(join(ws, "memory/HISTORY.md"), "[2026-04-01 10:00] Old fact.\n\n[2026-04-01 11:00] Older talk.\n");
    const env = { TROUPE_HOME: home };

    const before = await runCli(["memory", "show"], env);
    expect(before.stderr).toBe("");
    expect(before.stdout).toMatch(/USER\.md\s+7 bytes/);
    expect(before.stdout).toMatch(/SOUL\.md\s+missing/);
    expect(before.stdout).toContain("memory/history.jsonl: 2 entries (cursors 1–2)");
    expect(before.stdout).toContain(".cursor 2, .dream_cursor 2 (0 entries not yet digested)");
    expect(before.stdout).toContain("next run not scheduled yet");

    await writeFile(join(ws, "memory/history.jsonl"), `${await readFile(join(ws, "memory/history.jsonl"), "utf8")}${JSON.stringify({ cursor: 3, timestamp: "2026-04-02 09:00", content: "- [permanent] prefers short replies" })}\n`);
    const run = await runCli(["dream", "run"], env);
    expect(run.stderr).toBe("");
    expect(run.stdout).toMatch(/^Noted the short replies \(commit [0-9a-f]{7}; USER\.md: \+2 -0 lines\)\n$/);
    expect(await readFile(join(ws, "USER.md"), "utf8")).toContain("Prefers short replies");

    const log = await runCli(["dream", "log"], env);
    const shas = [...log.stdout.matchAll(/^([0-9a-f]{7}) /gm)].map((m) => m[1]!);
    expect(shas).toHaveLength(2);
    const one = await runCli(["dream", "log", shas[0]!], env);
    expect(one.stdout).toContain("+- Prefers short replies");
    const restore = await runCli(["dream", "restore", shas[1]!], env);
    expect(restore.stdout).toMatch(/^Restored SOUL.md, USER.md and memory\/MEMORY.md as of [0-9a-f]{7}/);
    expect(await readFile(join(ws, "USER.md"), "utf8")).toBe("# User\n");
    const bad = await runCli(["dream", "restore", "nope!"], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe('"nope!" is not a commit sha (see /dream-log for them)\n');

    // With the daemon running, the same commands go through it.
    gateway = await startGateway(home);
    const live = await runCli(["memory", "show"], env);
    expect(live.stdout).toMatch(/dream {5}idle; next run \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/);
    expect(live.stdout).toContain("last run");
    const again = await runCli(["dream", "run"], env);
    expect(again.stdout).toBe("nothing new to digest\n");
  });
});
