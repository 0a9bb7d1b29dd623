import { spawn } from "node:child_process";
import { readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { dataPaths } from "../../src/paths.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { runCli, TROUPE_BIN } from "../helpers/cli.js";
import { writeGatewayHome } from "../helpers/daemon.js";
import { getJson, sendMessage, startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";

/** A damaged store (issue 23): a missing MANIFEST names its repair; a corrupted log is reported with a count. */
describe("a damaged store (real gateway processes)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let gateway: GatewayProcess | undefined;
  closeAfterEach(() => [gateway, fake]);

  /** A data dir with two sessions, answered; the gateway stopped as `stop` says. */
  async function homeWithSessions(stop: NodeJS.Signals): Promise<string> {
    fake = await startFakeOpenAi([], () => ({ content: "noted" }));
    const home = await tmp();
    await writeGatewayHome(home, fake.url);
    const g = (gateway = await startGateway(home));
    for (const key of ["api:one", "api:two"]) expect(await sendMessage(g, key, `remember ${key} ${"y".repeat(2_000)}`).replied).toBe(true);
    g.proc.kill(stop);
    await g.exited;
    gateway = undefined;
    return home;
  }

  /** Runs `troupe gateway` expecting it not to start: its exit code and output. */
  function failedStart(home: string): Promise<{ code: number | null; out: string }> {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("TROUPE_")));
    const proc = spawn(process.execPath, [TROUPE_BIN, "gateway"], { env: { ...clean, TROUPE_HOME: home } });
    let out = "";
    proc.stdout.on("data", (c: Buffer) => (out += c.toString()));
    proc.stderr.on("data", (c: Buffer) => (out += c.toString()));
    const timer = setTimeout(() => proc.kill("SIGKILL"), 60_000);
    return new Promise((resolve) =>
      proc.once("exit", (code) => {
        clearTimeout(timer);
        resolve({ code, out });
      }),
    );
  }

  it("a store whose MANIFEST is gone: one line naming the damage and the repair; doctor --repair brings the sessions back", async () => {
    const home = await homeWithSessions("SIGTERM");
    const { storeDir } = dataPaths({ TROUPE_HOME: home });
    const manifests = (await readdir(storeDir)).filter((f) => f.startsWith("MANIFEST-"));
    expect(manifests.length).toBeGreaterThan(0);
    for (const m of manifests) await rm(join(storeDir, m));

    const start = await failedStart(home);
    expect(start.code).not.toBe(0);
    const lines = start.out.trim().split("\n");
    expect(lines, start.out).toHaveLength(1);
    expect(lines[0]).toMatch(/^the store at .* is damaged \(its manifest file MANIFEST-\d+ is missing\); repair it with `troupe doctor --repair`/);
    expect(start.out).not.toMatch(/unexpected error/);

    const doctor = await runCli(["doctor"], { TROUPE_HOME: home });
    expect(doctor.stdout).toMatch(/FAIL {2}store: damaged: its manifest file MANIFEST-\d+ is missing .*: repair it with troupe doctor --repair/);

    const repair = await runCli(["doctor", "--repair"], { TROUPE_HOME: home });
    expect(repair.code, repair.stderr).toBe(0);
    expect(repair.stdout).toMatch(/copied the store aside to .*store\.damaged-/);
    expect(repair.stdout).toMatch(/2 session\(s\) and 2 turn\(s\) read back/);
    // The copy holds the damaged store as it was.
    const copy = /copied the store aside to (\S+)/.exec(repair.stdout)![1]!;
    expect((await readdir(copy)).some((f) => f.endsWith(".log") || f.endsWith(".ldb"))).toBe(true);

    const g = (gateway = await startGateway(home));
    const { sessions } = await getJson<{ sessions: Array<{ key: string }> }>(g, "/api/sessions");
    expect(sessions.map((s) => s.key).sort()).toEqual(["api:one", "api:two"]);
    expect(await sendMessage(g, "api:one", "still there?").replied).toBe(true);
  }, 180_000);

  it("a store whose newest log has flipped bits: the gateway starts and warns with the count of what LevelDB dropped", async () => {
    // SIGKILL: the writes stay in LevelDB's log (nothing is compacted at close), where the damage goes.
    const home = await homeWithSessions("SIGKILL");
    const { storeDir, logsDir } = dataPaths({ TROUPE_HOME: home });
    const logs = (await readdir(storeDir)).filter((f) => /^\d+\.log$/.test(f)).sort();
    const newest = join(storeDir, logs.at(-1)!);
    const bytes = await readFile(newest);
    expect(bytes.length).toBeGreaterThan(4_000);
    for (let at = 1_000; at < bytes.length; at += 3_000) bytes[at] = bytes[at]! ^ 0xff;
    await writeFile(newest, bytes);

    const g = (gateway = await startGateway(home));
    const warning = await until(async () => {
      const text = await readFile(join(logsDir, "troupe.log"), "utf8");
      return /LevelDB dropped (\d+) damaged record\(s\) \((\d+) bytes\)/.exec(text) ?? undefined;
    }, 20_000, "the warning about dropped records");
    expect(Number(warning[1])).toBeGreaterThan(0);
    expect(Number(warning[2])).toBeGreaterThan(0);
    // It still serves.
    expect(await sendMessage(g, "api:three", "hello").replied).toBe(true);
  }, 180_000);
});
