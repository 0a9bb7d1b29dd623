import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { writeHome } from "../helpers/home.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";

/**
 * A nanobot user's conversations (nanobot/session/manager.py: <workspace>/sessions/<key>.jsonl, a metadata line, then
 * one message a line) and cron jobs (nanobot/cron/service.py: <workspace>/cron/jobs.json, ~/.nanobot/cron/jobs.json)
 * are imported when troupe first starts on a data dir, once, and the nanobot files are left as they are.
 */
describe("importing nanobot's sessions and cron jobs at the first start", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  closeAfterEach(() => [fake]);

  async function nanobotHome(url: string) {
    const home = await tmp();
    const user = await tmp();
    const workspace = join(user, ".nanobot", "workspace");
    await mkdir(join(workspace, "sessions"), { recursive: true });
    const lines = [
      { _type: "metadata", key: "telegram:123", created_at: "2026-01-01T10:00:00.123456", updated_at: "2026-01-02T10:00:00", metadata: {}, last_consolidated: 2 },
      { role: "user", content: "remember the milk", timestamp: "2026-01-01T10:00:01" },
      { role: "assistant", content: "Noted.", timestamp: "2026-01-01T10:00:02" },
      { role: "user", content: "what is in notes.txt?", timestamp: "2026-01-02T09:00:00" },
      { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "read_file", arguments: '{"path":"notes.txt"}' } }] },
      { role: "tool", tool_call_id: "call_1", name: "read_file", content: "buy milk" },
      { role: "assistant", content: "It says: buy milk.", timestamp: "2026-01-02T09:00:05" },
    ];
    await writeFile(join(workspace, "sessions", "telegram_123.jsonl"), `${lines.map((l) => JSON.stringify(l)).join("\n")}\n{not json\n`);
    await mkdir(join(workspace, "cron"), { recursive: true });
    const jobs = {
      version: 1,
      jobs: [
        {
          id: "a1b2c3d4",
          name: "Daily Loving Message",
          enabled: true,
          schedule: { kind: "cron", atMs: null, everyMs: null, expr: "0 10 * * *", tz: "Asia/Kuwait" },
          payload: { kind: "agent_turn", message: "hello", deliver: true, channel: "telegram", to: "123" },
          state: { nextRunAtMs: 1767250800000, lastRunAtMs: 1767164400000, lastStatus: "ok", lastError: null, runHistory: [] },
          createdAtMs: 1767000000000,
          updatedAtMs: 1767000000000,
          deleteAfterRun: false,
        },
        {
          id: "past0001",
          name: "once",
          enabled: true,
          schedule: { kind: "at", atMs: 1700000000000 },
          payload: { kind: "agent_turn", message: "too late" },
          state: {},
          deleteAfterRun: true,
        },
      ],
    };
    await writeFile(join(workspace, "cron", "jobs.json"), JSON.stringify(jobs, null, 2));
    await mkdir(join(user, ".nanobot", "cron"), { recursive: true });
    await writeFile(join(user, ".nanobot", "cron", "jobs.json"), "{not valid json");
    await writeHome(home, url, { defaults: { workspace } });
    return { home, env: { TROUPE_HOME: home, HOME: user }, workspace, user };
  }

  it("shows them in sessions and cron after the first start, and a second start imports nothing twice", async () => {
    fake = await startFakeOpenAi([{ content: "one" }, { content: "two" }]);
    const { env, workspace, user } = await nanobotHome(fake.url);
    const files = [join(workspace, "sessions", "telegram_123.jsonl"), join(workspace, "cron", "jobs.json"), join(user, ".nanobot", "cron", "jobs.json")];
    const before = await Promise.all(files.map((f) => readFile(f, "utf8")));

    expect((await runCli(["agent", "-m", "hi"], env)).stdout).toBe("one\n");
    const list = await runCli(["sessions", "list"], env);
    expect(list.stdout).toMatch(/^telegram:123\s/m);
    const show = async () => (await runCli(["sessions", "show", "telegram:123"], env)).stdout;
    const shown = await show();
    expect(shown).toContain("  user: remember the milk\n  assistant: Noted.\n  user: what is in notes.txt?\n");
    expect(shown).toContain('  assistant → read_file({"path":"notes.txt"})\n  tool read_file: buy milk\n  assistant: It says: buy milk.\n');
    const cron = (await runCli(["cron", "list"], env)).stdout;
    expect(cron).toMatch(/^a1b2c3d4\s+Daily Loving Message\s+cron 0 10 \* \* \* \(Asia\/Kuwait\)\s+enabled.*telegram:123/m);
    expect(cron).not.toContain("past0001");
    const today = new Date().toISOString().slice(0, 10);
    const status = async () => (await runCli(["status"], env)).stdout;
    expect(await status()).toContain(`nanobot:   imported 1 session and 1 cron job from nanobot on ${today}`);

    expect((await runCli(["agent", "-m", "again"], env)).stdout).toBe("two\n");
    expect(await show()).toBe(shown);
    expect((await runCli(["cron", "list"], env)).stdout.match(/a1b2c3d4/g)).toHaveLength(1);
    expect(await status()).toContain(`nanobot:   imported 1 session and 1 cron job from nanobot on ${today}`);
    expect(await Promise.all(files.map((f) => readFile(f, "utf8")))).toEqual(before);
  });
});
