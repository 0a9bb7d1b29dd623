import { spawn, type ChildProcess } from "node:child_process";
import { copyFile, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isAlive } from "../../src/cli/pidfile.js";
import { runCli } from "../helpers/cli.js";
import { writeHome } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";

/** `troupe daemon stop|status|restart` check that daemon.pid names this data dir's gateway before they signal it. */
describe("troupe daemon and a pidfile that names someone else", () => {
  const tmp = useTempDirs();
  const homes: string[] = [];
  let stranger: ChildProcess | undefined;
  afterEach(async () => {
    stranger?.kill("SIGKILL");
    stranger = undefined;
    for (const home of homes.splice(0)) await runCli(["daemon", "stop"], { TROUPE_HOME: home });
  });

  /** A process that is not troupe, as one that got the dead gateway's pid would be. */
  function startStranger(): number {
    stranger = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
    return stranger.pid!;
  }
  const gone = (file: string) => stat(file).then(
    () => false,
    () => true,
  );

  it("a pid reused by another process is never signalled: stop, status and restart remove the stale pidfile with a note", async () => {
    const home = await tmp();
    await writeHome(home, "http://127.0.0.1:9/v1", { config: { gateway: { port: 0 } } });
    const pid = startStranger();
    const pidFile = join(home, "daemon.pid");
    const stale = JSON.stringify({ pid, url: "http://127.0.0.1:9", startedAt: Date.now() - 60_000 });
    const note = `removed a stale ${pidFile} (pid ${pid} is not troupe's gateway for ${home})`;

    await writeFile(pidFile, stale);
    const stop = await runCli(["daemon", "stop"], { TROUPE_HOME: home });
    expect(stop.stderr).toBe("");
    expect(stop.stdout).toBe(`${note}\ntroupe daemon is not running\n`);
    expect(stop.code).toBe(0);
    expect(isAlive(pid)).toBe(true);
    expect(await gone(pidFile)).toBe(true);

    await writeFile(pidFile, stale);
    const status = await runCli(["daemon", "status"], { TROUPE_HOME: home });
    expect(status.stdout).toBe(`${note}\ntroupe daemon is not running\n`);
    expect(status.code).toBe(3);
    expect(isAlive(pid)).toBe(true);
    expect(await gone(pidFile)).toBe(true);

    await writeFile(pidFile, stale);
    homes.push(home);
    const restart = await runCli(["daemon", "restart"], { TROUPE_HOME: home });
    expect(restart.stderr).toBe("");
    expect(restart.code).toBe(0);
    expect(isAlive(pid)).toBe(true);
    const fresh = JSON.parse(await readFile(pidFile, "utf8")) as { pid: number; url: string };
    expect(fresh.pid).not.toBe(pid);
    expect(restart.stdout).toBe(`${note}\ntroupe daemon is not running\ntroupe daemon started (pid ${fresh.pid}) on ${fresh.url}; logs: troupe daemon logs -f\n`);
  });

  it("another data dir's running gateway, named by a copied pidfile, is left running", async () => {
    const [a, b] = [await tmp(), await tmp()];
    for (const home of [a, b]) await writeHome(home, "http://127.0.0.1:9/v1", { config: { gateway: { port: 0 } } });
    homes.push(a);
    expect((await runCli(["daemon", "start"], { TROUPE_HOME: a })).code).toBe(0);
    const info = JSON.parse(await readFile(join(a, "daemon.pid"), "utf8")) as { pid: number; url: string };
    await copyFile(join(a, "daemon.pid"), join(b, "daemon.pid"));

    const stop = await runCli(["daemon", "stop"], { TROUPE_HOME: b });
    expect(stop.stdout).toBe(`removed a stale ${join(b, "daemon.pid")} (pid ${info.pid} is not troupe's gateway for ${b})\ntroupe daemon is not running\n`);
    expect(stop.code).toBe(0);
    expect(isAlive(info.pid)).toBe(true);
    expect(await gone(join(b, "daemon.pid"))).toBe(true);
    expect(await (await fetch(`${info.url}/health`)).json()).toMatchObject({ ok: true, pid: info.pid, dataDir: a });
  });
});
