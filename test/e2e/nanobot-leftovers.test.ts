import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { writeHome } from "../helpers/home.js";
import { useTempDirs } from "../helpers/tmp.js";

/**
 * A nanobot user's conversations (<workspace>/sessions/*.jsonl, nanobot/session/manager.py: a metadata line, then one
 * message a line) and cron jobs (~/.nanobot/cron/jobs.json, or <workspace>/cron/jobs.json from v0.3.0 on:
 * nanobot/cron/service.py, {"version":1,"jobs":[...]}) are imported at the first start (nanobot-import.test.ts); until then
 * `troupe status` and `doctor` say so.
 */
describe("nanobot sessions and cron jobs left behind", () => {
  const tmp = useTempDirs();

  async function nanobotHome() {
    const home = await tmp();
    const user = await tmp();
    const workspace = join(user, ".nanobot", "workspace");
    await mkdir(join(workspace, "sessions"), { recursive: true });
    const meta = (key: string) => JSON.stringify({ _type: "metadata", key, created_at: "2026-01-01T00:00:00", updated_at: "2026-01-02T00:00:00", metadata: {}, last_consolidated: 0 });
    await writeFile(join(workspace, "sessions", "telegram_123.jsonl"), `${meta("telegram:123")}\n${JSON.stringify({ role: "user", content: "hi", timestamp: "2026-01-01T00:00:01" })}\n`);
    await writeFile(join(workspace, "sessions", "cli_direct.jsonl"), `${meta("cli:direct")}\n`);
    await mkdir(join(user, ".nanobot", "cron"), { recursive: true });
    const job = (id: string) => ({ id, name: id, enabled: true, schedule: { kind: "every", everyMs: 60_000 }, payload: { kind: "agent_turn", message: "m", deliver: false }, state: {} });
    await writeFile(join(user, ".nanobot", "cron", "jobs.json"), JSON.stringify({ version: 1, jobs: [job("a1"), job("b2")] }));
    await writeHome(home, "http://127.0.0.1:9/v1", { defaults: { workspace } });
    return { home, user, workspace };
  }

  it("status and doctor name them, and leave the files as they are", async () => {
    const { home, user, workspace } = await nanobotHome();
    const jobsFile = join(user, ".nanobot", "cron", "jobs.json");
    const before = await readFile(jobsFile, "utf8");
    const line = `found 2 nanobot sessions in ${join(workspace, "sessions")} and 2 cron jobs in ${jobsFile}: not imported yet`;
    const status = await runCli(["status"], { TROUPE_HOME: home, HOME: user });
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`nanobot:   ${line}`);
    const doctor = await runCli(["doctor"], { TROUPE_HOME: home, HOME: user });
    expect(doctor.stdout).toMatch(new RegExp(`^warn  nanobot: ${line.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: `, "m"));
    expect(await readFile(jobsFile, "utf8")).toBe(before);
  });

  it("says nothing when there is nothing of nanobot's", async () => {
    const home = await tmp();
    const user = await tmp();
    await writeHome(home, "http://127.0.0.1:9/v1", { defaults: { workspace: join(user, "ws") } });
    expect((await runCli(["status"], { TROUPE_HOME: home, HOME: user })).stdout).not.toContain("nanobot:");
    expect((await runCli(["doctor"], { TROUPE_HOME: home, HOME: user })).stdout).not.toContain("nanobot:");
  });
});
