import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { writeHome } from "../helpers/home.js";
import { useTempDirs } from "../helpers/tmp.js";

/**
 * The heartbeat is a protected system job from the first `troupe cron` on a fresh data dir, with no daemon
 * started yet (nanobot's gateway builds its HeartbeatService from config, not from a store a daemon filled).
 */
describe("troupe cron on a fresh data dir (no daemon ever started)", () => {
  const tmp = useTempDirs();
  const cron = (home: string, ...args: string[]) => runCli(["cron", ...args], { TROUPE_HOME: home });
  const row = (stdout: string, id: string) => stdout.split("\n").find((l) => l.startsWith(`${id} `));

  it("lists the heartbeat as a system job whose reply goes to the last chat, and disables and enables it", async () => {
    const home = await tmp();
    await writeHome(home, "http://127.0.0.1:9/v1", { config: { gateway: { heartbeat: { intervalS: 600 } } } });
    const listed = await cron(home, "list");
    expect(listed.code).toBe(0);
    expect(row(listed.stdout, "heartbeat")).toMatch(/^heartbeat\s+heartbeat\s+every 10m?\S*\s+enabled \(system\).*\(the chat last written from\)$/);
    expect(listed.stdout).not.toContain("api:heartbeat");

    expect(await cron(home, "disable", "heartbeat")).toMatchObject({ code: 0, stdout: "job heartbeat disabled\n" });
    expect(row((await cron(home, "list")).stdout, "heartbeat")).toMatch(/disabled \(system\)/);
    // A second listing keeps the user's choice (same schedule: the job is kept as it is).
    expect(row((await cron(home, "list")).stdout, "heartbeat")).toMatch(/disabled \(system\)/);
    expect(await cron(home, "enable", "heartbeat")).toMatchObject({ code: 0, stdout: expect.stringMatching(/^job heartbeat enabled; next run /) });
    expect(await cron(home, "remove", "heartbeat")).toMatchObject({ code: 1, stderr: expect.stringContaining("heartbeat is a protected system job") });
  });

  it("lists no heartbeat when gateway.heartbeat.enabled is false", async () => {
    const home = await tmp();
    await writeHome(home, "http://127.0.0.1:9/v1", { config: { gateway: { heartbeat: { enabled: false } } } });
    const listed = await cron(home, "list");
    expect(listed.code).toBe(0);
    expect(row(listed.stdout, "heartbeat")).toBeUndefined();
    expect(await cron(home, "disable", "heartbeat")).toMatchObject({ code: 1, stderr: "no cron job heartbeat; troupe cron list shows them\n" });
  });
});
