import { describe, expect, it } from "vitest";
import { listRuns, listJobs, type CronRun } from "../../src/cron/jobs.js";
import { addJobInput } from "../../src/cron/requests.js";
import { createCronService } from "../../src/cron/service.js";
import { dataPaths } from "../../src/paths.js";
import { openStore } from "../../src/store/store.js";
import { listTurns } from "../../src/store/turns.js";
import { startFakeOpenAi, type FakeOpenAi, type RecordedRequest } from "../fixtures/fake-openai.js";
import { startFakeTelegram, type FakeTelegram } from "../fixtures/fake-telegram.js";
import { runCli } from "../helpers/cli.js";
import { telegramOn, writeGatewayHome, writeHome } from "../helpers/daemon.js";
import { getJson, startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";

interface Reply {
  answers: string[];
  content: string;
}
interface ActorNode {
  id: string;
  state: string | null;
  children: ActorNode[];
}

/** `troupe cron list`'s row for Dream: its schedule, a next run, a system job; it delivers nowhere. */
const DREAM_ROW = /^dream\s+dream\s+every 2h\s+enabled \(system\)\s+\d{4}-\d\d-\d\d \d\d:\d\d UTC\s+-\s+\(not delivered\)$/m;

/**
 * nanobot tests/cron/test_cron_service.py test_remove_job_refuses_system_jobs: removing Dream is
 * refused and Dream is still there; pausing it is refused too, pointing at its config key.
 */
async function expectDreamProtected(cli: (...args: string[]) => Promise<{ code: number | null; stdout: string; stderr: string }>) {
  const removed = await cli("remove", "dream");
  expect([removed.code, removed.stderr.trim()]).toEqual([1, "dream is a protected system job (Dream memory consolidation) and cannot be removed; to turn Dream off, set agents.defaults.dream.enabled to false in config.json"]);
  const disabled = await cli("disable", "dream");
  expect([disabled.code, disabled.stderr.trim()]).toEqual([1, expect.stringMatching(/^dream is a system job with its own schedule: .*agents\.defaults\.dream\.enabled/)]);
  expect((await cli("list")).stdout).toMatch(DREAM_ROW);
}

const isRunPrompt = (req: RecordedRequest) => JSON.stringify(req.body.messages.at(-1)?.content ?? "").includes("[Scheduled job");

/**
 * kill -9 around a cron firing (real gateway processes, fake model): before the run is recorded, just
 * after (TROUPE_FAULT=after-cron-run-write), while its turn waits on the model, and after its reply
 * was delivered. Each time the instant runs exactly once (one run record, one turn) and its reply
 * reaches the chat exactly once.
 */
describe("cron across kill -9 (real gateway processes)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let tg: FakeTelegram | undefined;
  let gateway: GatewayProcess | undefined;
  closeAfterEach(() => [gateway, fake, tg]);

  /** The model answers a run with "reminder #N" (N counts the run prompts it saw); `hold` keeps the answer back while it returns true. */
  async function model(hold: () => boolean = () => false) {
    let runPrompts = 0;
    fake = await startFakeOpenAi([], async (req) => {
      if (!isRunPrompt(req)) return { content: "ok" };
      runPrompts++;
      while (hold()) await new Promise((r) => setTimeout(r, 50));
      return { content: "Drink water now." };
    });
    return { runPrompts: () => runPrompts };
  }

  async function home(extra: Record<string, unknown> = {}) {
    const dir = await tmp();
    await writeGatewayHome(dir, fake!.url, { gateway: { heartbeat: { enabled: false } }, ...extra });
    return dir;
  }

  /**
   * Adds an `at` job: through the running gateway's control API, or straight into the store when none
   * runs (the CLI takes seconds to start on a loaded machine: too slow for an instant a few seconds away).
   */
  async function addAt(dir: string, atMs: number, g?: GatewayProcess, to: { channel: string; to: string } = { channel: "api", to: "me" }): Promise<string> {
    const body = { name: "water", message: "Remind me to drink water", at: new Date(atMs).toISOString(), ...to };
    if (g) {
      const res = await fetch(`${g.url}/api/cron/jobs`, { method: "POST", headers: { ...g.auth, "content-type": "application/json" }, body: JSON.stringify(body) });
      expect(res.status).toBe(201);
      return ((await res.json()) as { job: { id: string } }).job.id;
    }
    const store = await openStore(dataPaths({ TROUPE_HOME: dir }).storeDir);
    try {
      return (await createCronService({ store, defaultTz: "UTC" }).add(addJobInput(body))).id;
    } finally {
      await store.close();
    }
  }

  const replies = async (g: GatewayProcess) => (await getJson<{ replies: Reply[] }>(g, "/api/sessions/me/replies")).replies;
  const cronReplies = async (g: GatewayProcess, jobId: string) => (await replies(g)).filter((r) => r.answers.some((a) => a.startsWith(`cron:${jobId}:`)));
  /** The scheduler has fired at least once since this process started and is waiting for the next instant. */
  const schedulerSettled = async (g: GatewayProcess) => {
    const { root } = await getJson<{ root: ActorNode }>(g, "/api/actors");
    return root.children.find((c) => c.id === "cron")?.state === "waiting";
  };
  async function storeState(dir: string, jobId: string): Promise<{ runs: CronRun[]; jobs: number; turns: number }> {
    const store = await openStore(dataPaths({ TROUPE_HOME: dir }).storeDir);
    try {
      const turns = (await listTurns(store)).filter((t) => t.sessionKey === `cron:${jobId}`);
      return { runs: await listRuns(store, jobId), jobs: (await listJobs(store)).length, turns: turns.length };
    } finally {
      await store.close();
    }
  }
  async function stop(g: GatewayProcess) {
    g.proc.kill("SIGTERM");
    await g.exited;
    gateway = undefined;
  }
  async function expectOnce(dir: string, g: GatewayProcess, jobId: string) {
    await until(() => schedulerSettled(g), 20_000, "the scheduler to settle after the restart");
    const delivered = await cronReplies(g, jobId);
    expect(delivered.map((r) => r.content)).toEqual(["Drink water now."]);
    await stop(g);
    const state = await storeState(dir, jobId);
    expect(state.runs.map((r) => r.status)).toEqual(["ok"]);
    expect(state.turns).toBe(1);
    // The at job is gone once it has run; its run stays for `troupe cron runs`.
    expect(state.jobs).toBe(0);
    const shown = await runCli(["cron", "runs", jobId], { TROUPE_HOME: dir });
    expect(shown.stdout).toMatch(/ok\s+schedule\s+-\s+\d{4}-\d\d-\d\d \d\d:\d\d (UTC|[+-]\d\d:\d\d)\s+Drink water now\./);
  }

  it("killed before the firing: after the restart the missed instant runs once and is delivered once", async () => {
    const m = await model();
    const dir = await home();
    const g = (gateway = await startGateway(dir));
    const atMs = Date.now() + 4_000;
    const jobId = await addAt(dir, atMs, g);
    g.proc.kill("SIGKILL");
    await g.exited;
    expect((await storeState(dir, jobId)).runs).toEqual([]);
    await until(() => Date.now() > atMs + 200, 10_000, "the instant to pass while troupe is down");
    const g2 = (gateway = await startGateway(dir));
    await until(async () => (await cronReplies(g2, jobId)).length > 0, 20_000, "the missed run's reply");
    expect(m.runPrompts()).toBe(1);
    await expectOnce(dir, g2, jobId);
  }, 90_000);

  it("killed just after the run was recorded, before its turn started: the same run resumes, once", async () => {
    const m = await model();
    const dir = await home();
    const jobId = await addAt(dir, Date.now() + 2_500);
    // The instant may pass while it starts: then the fault hits before it listens. Either way it dies by it.
    const g = await startGateway(dir, { TROUPE_FAULT: "after-cron-run-write" }).catch((err: Error) => err);
    if (g instanceof Error) expect(g.message).toMatch(/exited before listening/);
    else expect((await g.exited).signal).toBe("SIGKILL");
    expect(m.runPrompts()).toBe(0);
    const before = await storeState(dir, jobId);
    expect(before.runs.map((r) => r.status)).toEqual(["running"]);
    const g2 = (gateway = await startGateway(dir));
    await until(async () => (await cronReplies(g2, jobId)).length > 0, 20_000, "the resumed run's reply");
    expect(m.runPrompts()).toBe(1);
    await expectOnce(dir, g2, jobId);
  }, 90_000);

  it("killed while the run's turn waits on the model: the turn resumes, one run, one reply", async () => {
    let holding = true;
    const m = await model(() => holding);
    const dir = await home();
    const g = (gateway = await startGateway(dir));
    const jobId = await addAt(dir, Date.now() + 2_000, g);
    await until(() => m.runPrompts() === 1, 20_000, "the run's model call");
    g.proc.kill("SIGKILL");
    await g.exited;
    holding = false;
    const g2 = (gateway = await startGateway(dir));
    await until(async () => (await cronReplies(g2, jobId)).length > 0, 20_000, "the resumed run's reply");
    // The interrupted model call is issued again for the same turn: no second run.
    expect(m.runPrompts()).toBe(2);
    await expectOnce(dir, g2, jobId);
  }, 90_000);

  it("killed after the reply was delivered: nothing runs or is sent again", async () => {
    const m = await model();
    const dir = await home();
    const g = (gateway = await startGateway(dir));
    const jobId = await addAt(dir, Date.now() + 2_000, g);
    await until(async () => (await cronReplies(g, jobId)).length > 0, 20_000, "the run's reply");
    g.proc.kill("SIGKILL");
    await g.exited;
    const g2 = (gateway = await startGateway(dir));
    expect(m.runPrompts()).toBe(1);
    await expectOnce(dir, g2, jobId);
    expect(m.runPrompts()).toBe(1);
  }, 90_000);

  it("a reminder added through the running daemon is delivered to the fake Telegram once", async () => {
    await model();
    tg = await startFakeTelegram("123:CRON");
    const dir = await home({ channels: { telegram: telegramOn(tg) } });
    const g = (gateway = await startGateway(dir));
    const jobId = await addAt(dir, Date.now() + 2_000, g, { channel: "telegram", to: "42" });
    expect((await getJson<{ jobs: Array<{ id: string; target: unknown }> }>(g, "/api/cron/jobs")).jobs.find((j) => j.id === jobId)?.target).toEqual({ channel: "telegram", chatId: "42" });
    await until(() => tg!.delivered().some((b) => String(b.text).includes("Drink water now.")), 20_000, "the reminder on Telegram");
    await until(() => schedulerSettled(g), 20_000, "the scheduler to settle");
    await stop(g);
    expect(tg.delivered().filter((b) => String(b.text).includes("Drink water now."))).toHaveLength(1);
    expect(tg.delivered().find((b) => String(b.text).includes("Drink water now."))?.chat_id).toBe("42");
  }, 90_000);

  it("troupe cron through the running daemon: add, list, disable, remove; the heartbeat is listed and protected", async () => {
    await model();
    const dir = await tmp();
    await writeHome(dir, fake!.url, { config: { gateway: { port: 0, heartbeat: { intervalS: 3600 } } } });
    const g = (gateway = await startGateway(dir));
    const cli = (...args: string[]) => runCli(["cron", ...args], { TROUPE_HOME: dir });
    const added = await cli("add", "--name", "standup", "--message", "Morning standup", "--cron", "0 9 * * 1-5", "--tz", "Asia/Shanghai", "--channel", "api", "--to", "me", "--catch-up", "skip");
    expect(added.stderr).toBe("");
    const id = /added job ([0-9a-f]+) \(standup\), cron 0 9 \* \* 1-5 \(Asia\/Shanghai\); replies go to api:me/.exec(added.stdout)?.[1];
    expect(id, added.stdout).toBeDefined();
    // The daemon has it: the job came through its control API, not the store (which the daemon holds).
    expect((await getJson<{ jobs: Array<{ id: string; catchUp: string }> }>(g, "/api/cron/jobs")).jobs.find((j) => j.id === id)?.catchUp).toBe("skip");
    // Dream's first deadline is stored once its actor has loaded (at start, beside the listening).
    await until(async () => (await getJson<{ jobs: Array<{ id: string; nextRunAt: number | null }> }>(g, "/api/cron/jobs")).jobs.some((j) => j.id === "dream" && j.nextRunAt !== null), 20_000, "Dream's deadline");
    const listed = await cli("list");
    expect(listed.stdout).toMatch(new RegExp(`${id}\\s+standup\\s+cron 0 9 \\* \\* 1-5 \\(Asia/Shanghai\\)\\s+enabled\\s+\\d{4}-\\d\\d-\\d\\d 09:00 \\+08:00\\s`));
    expect(listed.stdout).toMatch(/heartbeat\s+heartbeat\s+every 1h\s+enabled \(system\)/);
    // Dream keeps its own schedule and is listed as the system job nanobot registers (every intervalH hours).
    expect(listed.stdout).toMatch(DREAM_ROW);
    const bad = await cli("add", "--name", "x", "--message", "y", "--every", "0");
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim()).toBe("troupe cron add: every_seconds: must be at least 1 second, not 0");
    expect((await cli("disable", id!)).stdout).toContain(`job ${id} disabled`);
    const protectedRemove = await cli("remove", "heartbeat");
    expect(protectedRemove.code).toBe(1);
    expect(protectedRemove.stderr).toContain("heartbeat is a protected system job and cannot be removed");
    await expectDreamProtected(cli);
    expect((await cli("remove", id!)).stdout).toContain(`removed job ${id}`);
    expect((await cli("list")).stdout).not.toContain("standup");
    await stop(g);
    // Without a daemon, on the store: the same.
    expect((await cli("list")).stdout).toMatch(DREAM_ROW);
    await expectDreamProtected(cli);
    // Each CLI call starts a node process: seconds apiece on a loaded machine.
  }, 240_000);
});
