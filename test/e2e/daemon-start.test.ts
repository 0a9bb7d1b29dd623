import { createServer, type Server } from "node:net";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { writeHome } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeTelegram } from "../fixtures/fake-telegram.js";

/** `troupe daemon start` and `status` say what happened at this start, and what is broken. */
describe("troupe daemon start and status tell the truth", () => {
  const tmp = useTempDirs();
  let home: string | undefined;
  const closers: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    if (home) await runCli(["daemon", "stop"], { TROUPE_HOME: home });
    home = undefined;
    for (const close of closers.splice(0)) await close();
  });

  it("a channel that failed at start is reported by start, fails daemon status, and troupe status shows the daemon and its channels", async () => {
    const telegram = await startFakeTelegram("the-right-token");
    closers.push(() => telegram.close());
    home = await tmp();
    const env = { TROUPE_HOME: home };
    await writeHome(home, "http://127.0.0.1:9/v1", {
      config: { gateway: { port: 0 }, channels: { telegram: { enabled: true, token: "a-wrong-token", apiRoot: telegram.apiRoot } } },
    });
    const before = await runCli(["status"], env);
    expect(before.stdout).toContain("\ndaemon:    not running (troupe daemon start)\n");
    expect(before.stdout).toContain("\nchannels:  api, telegram\n");

    const start = await runCli(["daemon", "start"], env);
    const info = JSON.parse(await readFile(join(home, "daemon.pid"), "utf8")) as { pid: number; url: string };
    expect(start.stdout).toBe(`troupe daemon started (pid ${info.pid}) on ${info.url}; logs: troupe daemon logs -f\n`);
    expect(start.stderr).toBe("telegram failed at start: Telegram rejected the bot token (401): Unauthorized. Check channels.telegram.token.\n");
    expect(start.code).toBe(1);

    const status = await runCli(["daemon", "status"], env);
    expect(status.stdout).toContain("FAILED: channel:telegram (Telegram rejected the bot token (401)");
    expect(status.code).toBe(1);
    expect(status.stdout).toMatch(/\nmemory: RSS \d+ MB, heap \d+ of \d+ MB/);

    const overview = await runCli(["status"], env);
    expect(overview.code).toBe(0);
    expect(overview.stdout).toContain(`\ndaemon:    running (pid ${info.pid}) on ${info.url}; failed: telegram\n`);
    expect(overview.stdout).toContain("\nchannels:  api, telegram\n");
  });

  it("a Telegram channel that never connected (its API port closed) is reported backing off by start, daemon status and troupe status, with its last error, redacted", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    const token = "123456789:AAF-secret-bot-token-0123456789abcdefXYZ";
    home = await tmp();
    const env = { TROUPE_HOME: home };
    await writeHome(home, "http://127.0.0.1:9/v1", { config: { gateway: { port: 0 }, channels: { telegram: { enabled: true, token, apiRoot: `http://127.0.0.1:${port}` } } } });

    const start = await runCli(["daemon", "start"], env);
    // It runs and retries: not a failed start.
    expect(start.code).toBe(0);
    expect(start.stderr).toMatch(/^telegram cannot reach its platform; retrying with backoff: network error: .*ECONNREFUSED/);

    const status = await runCli(["daemon", "status"], env);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/\n {2}channel:telegram \[channel\] backing_off \(\d+s\)\n/);
    expect(status.stdout).toMatch(/\nBACKING OFF: channel:telegram since \d+s \(\d+ failures?\): network error: request to http:\/\/127\.0\.0\.1:\d+\/bot\[REDACTED\]\/getMe failed, reason: connect ECONNREFUSED/);
    expect(status.stdout + start.stderr).not.toContain(token);

    const overview = await runCli(["status"], env);
    expect(overview.stdout).toMatch(/\ndaemon: {4}running \(pid \d+\) on \S+; backing off: telegram \(troupe daemon status says why\)\n/);
  });

  it("a start that fails prints this start's output only, not an earlier one's", async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    closers.push(() => new Promise((resolve) => blocker.close(resolve)));
    const port = (blocker.address() as { port: number }).port;
    const dir = await tmp();
    await writeHome(dir, "http://127.0.0.1:9/v1", { config: { gateway: { port } } });
    const inUse = `port ${port} on 127.0.0.1 is in use`;
    for (let i = 0; i < 2; i++) {
      const r = await runCli(["daemon", "start"], { TROUPE_HOME: dir });
      expect(r.code).toBe(1);
      expect(r.stderr.split(inUse).length - 1, r.stderr).toBe(1);
    }
  });
});
