import { readFile } from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import { putJobOps, type CronJob } from "../../src/cron/jobs.js";
import { appendMessagesOps, newSessionMeta } from "../../src/store/sessions.js";
import { openStore } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi, type FakeStep } from "../fixtures/fake-openai.js";
import { runCli } from "../helpers/cli.js";
import { writeHome } from "../helpers/daemon.js";
import { getJson, startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";

interface Listing {
  sessions: Array<{ key: string; turns: number; usage: { promptTokens: number; completionTokens: number; totalTokens: number } }>;
  corrupt?: Array<{ sublevel: string; key: string; problem: string }>;
}

/** A reply as a sloppy server sends it, streamed or whole: fractional, string and negative counts. */
function oddReply(message: Record<string, unknown>, delta: Record<string, unknown>): FakeStep {
  const usage = { prompt_tokens: 10.7, completion_tokens: "3", total_tokens: -1 };
  return {
    raw: { id: "x", object: "chat.completion", choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", ...message } }], usage },
    rawChunks: [{ id: "x", choices: [{ index: 0, delta, finish_reason: "stop" }] }, { id: "x", choices: [], usage }],
  };
}

/** `troupe cron <cmd> <id>` on a job whose record does not read: one line naming it, and `troupe cron remove`. */
async function expectUnreadable(home: string, cmd: string, id: string) {
  const r = await runCli(["cron", cmd, id], { TROUPE_HOME: home });
  const line = new RegExp(`^cron job ${id} cannot be read \\(record cron/job:${id} does not match its schema: schedule\\.everyS: [^\\n]*\\); troupe cron remove ${id} removes it\\n$`);
  expect([cmd, r.code, r.stdout, r.stderr]).toEqual([cmd, 1, "", expect.stringMatching(line)]);
}

describe("bad input never breaks what is stored (real gateway over loopback)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let gateway: GatewayProcess | undefined;
  afterEach(async () => {
    gateway?.proc.kill("SIGTERM");
    await gateway?.exited;
    gateway = undefined;
    await fake?.close();
  });

  it("odd token counts and a numeric tool-call id from the model leave a session that lists and shows", async () => {
    const call = { id: 7, type: "function", function: { name: "list_dir", arguments: { path: "." } } };
    fake = await startFakeOpenAi([
      oddReply({ content: null, tool_calls: [call] }, { tool_calls: [{ index: 0, ...call }] }),
      oddReply({ content: "Listed it." }, { content: "Listed it." }),
    ]);
    const home = await tmp();
    await writeHome(home, fake.url, { config: { gateway: { port: 0 } } });
    gateway = await startGateway(home);
    const g = gateway;
    const res = await fetch(`${g.url}/api/sessions/api%3Aodd/messages`, { method: "POST", headers: { ...g.auth, "content-type": "application/json" }, body: JSON.stringify({ content: "list it" }) });
    expect(await res.text()).toMatch(/event: reply\ndata: .*Listed it\./);

    const listing = await until(async () => {
      const l = await getJson<Listing>(g, "/api/sessions");
      return l.sessions.find((s) => s.key === "api:odd" && s.turns === 1) && l;
    }, 20_000, "the finished turn in the listing");
    // 10.7 → 10, "3" → 3, a negative total → the sum; twice (two model calls).
    expect(listing.sessions.find((s) => s.key === "api:odd")?.usage).toEqual({ promptTokens: 20, completionTokens: 6, totalTokens: 26 });
    expect(listing.corrupt).toEqual([]);
    const list = await runCli(["sessions", "list"], { TROUPE_HOME: home });
    expect([list.code, list.stderr]).toEqual([0, ""]);
    expect(list.stdout).toMatch(/^api:odd\s+1\s+26\s/m);
    const show = await runCli(["sessions", "show", "api:odd"], { TROUPE_HOME: home });
    expect(show.code).toBe(0);
    expect(show.stdout).toContain("assistant → list_dir(");
  }, 60_000);

  it("a corrupt record is skipped and named: the API answers 200, the CLI warns, with a daemon and without", async () => {
    const home = await tmp();
    fake = await startFakeOpenAi();
    await writeHome(home, fake.url, { config: { gateway: { port: 0 } } });
    const store = await openStore(`${home}/store`);
    const good = appendMessagesOps(newSessionMeta("api:good", 1), [{ role: "user", content: "hi" }], "t1", 2, { promptTokens: 1, completionTokens: 2, totalTokens: 3 }, true);
    const bad = { ...newSessionMeta("api:bad", 1), usage: { promptTokens: 2.5, completionTokens: 0, totalTokens: 2.5 } };
    await store.batch([...good.ops, { type: "put", sublevel: "sessions", key: "meta:api:bad", value: bad }], { sync: true });
    await store.close();
    const warning = /^warning: skipped corrupt record sessions\/meta:api:bad \(usage\.promptTokens: .*\)$/m;

    gateway = await startGateway(home);
    const res = await fetch(`${gateway.url}/api/sessions`, { headers: gateway.auth });
    expect(res.status).toBe(200);
    const listing = (await res.json()) as Listing;
    expect(listing.sessions.map((s) => s.key)).toEqual(["api:good"]);
    expect(listing.corrupt?.map((c) => `${c.sublevel}/${c.key}`)).toEqual(["sessions/meta:api:bad"]);
    const viaDaemon = await runCli(["sessions", "list"], { TROUPE_HOME: home });
    expect(viaDaemon.code).toBe(0);
    expect(viaDaemon.stdout).toMatch(/^api:good\s+1\s+3\s/m);
    expect(viaDaemon.stderr).toMatch(warning);

    gateway.proc.kill("SIGTERM");
    expect((await gateway.exited).code).toBe(0);
    gateway = undefined;
    const direct = await runCli(["sessions", "list"], { TROUPE_HOME: home });
    expect(direct.code).toBe(0);
    expect(direct.stdout).toMatch(/^api:good\s+1\s+3\s/m);
    expect(direct.stderr).toMatch(warning);
  }, 60_000);
  it("a huge cron interval is refused where it is entered; a stored one is skipped and named, and can be removed", async () => {
    const home = await tmp();
    fake = await startFakeOpenAi();
    await writeHome(home, fake.url, { config: { gateway: { port: 0, heartbeat: { enabled: false } } } });
    const refused = await runCli(["cron", "add", "--name", "big", "--message", "m", "--every", "9007199254740993"], { TROUPE_HOME: home });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/every_seconds: must be at most 315360000 seconds \(10 years\)/);

    // As an earlier version stored it: everyS past what a stored record holds.
    const job = (id: string, everyS: number): CronJob => ({
      v: 1, id, name: id, message: "m", schedule: { kind: "every", everyS }, enabled: true, deliver: false, target: { channel: "cron", chatId: "none" },
      catchUp: "once", createdBy: "cli", createdAt: 1, anchor: 1, nextRunAt: null, lastRunAt: null, lastStatus: null,
    });
    const store = await openStore(`${home}/store`);
    await store.batch([...putJobOps(job("good", 60)), ...putJobOps(job("bad1", 1e308)), ...putJobOps(job("bad2", 1e308))], { sync: true });
    await store.close();
    const warning = (id: string) => new RegExp(`^warning: skipped corrupt record cron/job:${id} \\(schedule\\.everyS: .*\\)$`, "m");

    gateway = await startGateway(home);
    const g = gateway;
    const res = await fetch(`${g.url}/api/cron/jobs`, { headers: g.auth });
    expect(res.status).toBe(200);
    const listing = (await res.json()) as { jobs: CronJob[]; corrupt?: Array<{ sublevel: string; key: string }> };
    // Dream, listed as a system job (not stored, so never corrupt), follows the stored jobs.
    expect(listing.jobs.map((j) => j.id)).toEqual(["good", "dream"]);
    expect(listing.corrupt?.map((c) => `${c.sublevel}/${c.key}`)).toEqual(["cron/job:bad1", "cron/job:bad2"]);
    const posted = await fetch(`${g.url}/api/cron/jobs`, { method: "POST", headers: { ...g.auth, "content-type": "application/json" }, body: JSON.stringify({ message: "m", every: 1e308 }) });
    expect([posted.status, await posted.text()]).toEqual([400, expect.stringMatching(/every_seconds: must be at most 315360000 seconds/)]);
    const viaDaemon = await runCli(["cron", "list"], { TROUPE_HOME: home });
    expect(viaDaemon.code).toBe(0);
    expect(viaDaemon.stdout).toMatch(/^good\s/m);
    expect(viaDaemon.stderr).toMatch(warning("bad1"));
    // Every other command on it says what is wrong and the way out (no HTTP 500, no stack), with a daemon and without.
    for (const cmd of ["runs", "enable", "disable", "run"]) await expectUnreadable(home, cmd, "bad1");
    expect((await fetch(`${g.url}/api/cron/jobs/bad1`, { method: "DELETE", headers: g.auth })).status).toBe(200);

    gateway.proc.kill("SIGTERM");
    expect((await gateway.exited).code).toBe(0);
    gateway = undefined;
    // Flushed by the time the gateway has exited.
    const log = await readFile(`${home}/logs/troupe.log`, "utf8");
    expect(log).toMatch(/"record":"cron\/job:bad1".*corrupt record skipped in a cron job listing/);
    const direct = await runCli(["cron", "list"], { TROUPE_HOME: home });
    expect([direct.code, direct.stdout]).toEqual([0, expect.stringMatching(/^good\s/m)]);
    expect(direct.stderr).toMatch(warning("bad2"));
    expect(direct.stderr).not.toMatch(warning("bad1"));
    for (const cmd of ["runs", "enable", "disable", "run"]) await expectUnreadable(home, cmd, "bad2");
    const removed = await runCli(["cron", "remove", "bad2"], { TROUPE_HOME: home });
    expect([removed.code, removed.stdout]).toEqual([0, "removed job bad2\n"]);
    expect((await runCli(["cron", "list"], { TROUPE_HOME: home })).stderr).toBe("");
  }, 60_000);
});
