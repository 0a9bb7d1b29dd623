import { describe, expect, it } from "vitest";
import { cronFinalOps, fireDue } from "../../src/cron/fire.js";
import { cronSessionKey, getJob, listRuns, type CatchUp } from "../../src/cron/jobs.js";
import { createCronService } from "../../src/cron/service.js";
import { sessionInbox } from "../../src/store/inbox.js";
import { openStore, type Store } from "../../src/store/store.js";
import { useTempDirs } from "../helpers/tmp.js";
import { closeAfterEach } from "../helpers/teardown.js";

/** fireDue on a real store with a fake clock: downtime across 5 instants under each catchUp policy. */
describe("firing due jobs (LevelDB, fake clock)", () => {
  const tmp = useTempDirs();
  let store: Store | undefined;
  closeAfterEach(() => [store]);

  const T0 = Date.parse("2026-03-01T00:00:00Z");
  const MIN = 60_000;

  async function setup(catchUp: CatchUp) {
    store = await openStore(await tmp());
    let clock = T0;
    const service = createCronService({ store, defaultTz: "UTC", now: () => clock });
    const job = await service.add({ message: "tick", everySeconds: 60, catchUp, target: { channel: "api", chatId: "me" } });
    // Down from just after creation until 20 s past the fifth instant; the daemon starts then.
    clock = T0 + 5 * MIN + 20_000;
    return { store, job, now: clock };
  }

  it("once: one run for the five instants, recording that four were missed; its message is in the inbox", async () => {
    const { store, job, now } = await setup("once");
    const result = await fireDue(store, now, now);
    expect(result.started).toHaveLength(1);
    const runs = await listRuns(store, job.id);
    expect(runs).toEqual([expect.objectContaining({ scheduledAt: T0 + 5 * MIN, status: "running", missed: 4, note: "4 missed run(s) caught up in this one" })]);
    const inbox = await sessionInbox(store, cronSessionKey(job.id));
    expect(inbox.map((m) => m.id)).toEqual([`cron:${job.id}:${T0 + 5 * MIN}`]);
    expect(inbox[0]!.content).toContain("It stands for 5 runs");
    expect((await getJob(store, job.id))?.nextRunAt).toBe(T0 + 6 * MIN);
    expect(result.nextAt).toBe(T0 + 6 * MIN);
  });

  it("skip: the five are recorded as skipped, nothing runs until the next instant", async () => {
    const { store, job, now } = await setup("skip");
    const result = await fireDue(store, now, now);
    expect(result.started).toEqual([]);
    const runs = await listRuns(store, job.id);
    expect(runs.map((r) => [r.scheduledAt - T0, r.status])).toEqual([1, 2, 3, 4, 5].map((i) => [i * MIN, "skipped"]));
    expect(runs[0]!.note).toContain("missed while troupe was not running; catchUp is skip");
    expect(await sessionInbox(store, cronSessionKey(job.id))).toEqual([]);
    // At the next instant it runs, on time.
    const next = await fireDue(store, T0 + 6 * MIN + 10, now);
    expect(next.started.map((s) => s.run.scheduledAt)).toEqual([T0 + 6 * MIN]);
  });

  it("all: each of the five runs", async () => {
    const { store, job, now } = await setup("all");
    const result = await fireDue(store, now, now);
    expect(result.started.map((s) => s.run.scheduledAt - T0)).toEqual([1, 2, 3, 4, 5].map((i) => i * MIN));
    expect((await sessionInbox(store, cronSessionKey(job.id))).length).toBe(5);
  });

  it("an instant is fired once: firing again at the same time, or after a restart, starts nothing", async () => {
    const { store, job, now } = await setup("once");
    await fireDue(store, now, now);
    expect((await fireDue(store, now, now)).started).toEqual([]);
    expect((await fireDue(store, now + 1_000, now + 500)).started).toEqual([]);
    expect(await listRuns(store, job.id)).toHaveLength(1);
  });

  it("the run's turn records how it ended, in its final batch; an at job is deleted then", async () => {
    store = await openStore(await tmp());
    const service = createCronService({ store, defaultTz: "UTC", now: () => T0 });
    const job = await service.add({ message: "once", at: "2026-03-01T00:05:00", target: { channel: "api", chatId: "me" } });
    const [started] = (await fireDue(store, T0 + 5 * MIN + 5, T0)).started;
    const { ops, deliver } = await cronFinalOps(store, [started!.run.messageId!, "api:unrelated"], true, "Done.", T0 + 6 * MIN);
    expect(deliver).toBe(true);
    await store.batch(ops, { sync: true });
    expect(await getJob(store, job.id)).toBeUndefined();
    expect(await listRuns(store, job.id)).toEqual([expect.objectContaining({ status: "ok", reply: "Done.", finishedAt: T0 + 6 * MIN })]);
    // Recorded once: a repeat (a resumed turn's batch written again) changes nothing.
    expect((await cronFinalOps(store, [started!.run.messageId!], true, "Again.", T0 + 7 * MIN)).ops).toEqual([]);
  });

  it("the run history keeps the last 20 runs", async () => {
    const { store, job } = await setup("skip");
    await fireDue(store, T0 + 30 * MIN + 20_000, T0 + 30 * MIN + 20_000);
    const runs = await listRuns(store, job.id);
    expect(runs).toHaveLength(20);
    expect(runs.at(-1)!.scheduledAt).toBe(T0 + 30 * MIN);
    // Nothing silently dropped: the older instants are counted.
    expect(runs[0]!.note).toContain("(and 10 earlier missed instant(s) not listed)");
    // Later runs push the oldest out; the history stays at 20.
    await fireDue(store, T0 + 31 * MIN + 10, T0);
    expect(await listRuns(store, job.id)).toHaveLength(20);
  });

  it("a system job keeps its next run and a user's disable across restarts; a new interval replaces it; disabled in config, it goes", async () => {
    store = await openStore(await tmp());
    let clock = T0;
    const service = createCronService({ store, defaultTz: "UTC", now: () => clock });
    const spec = (everyS: number) => ({ name: "heartbeat", message: "Check HEARTBEAT.md", schedule: { kind: "every" as const, everyS }, target: { channel: "api", chatId: "heartbeat" } });
    const first = await service.ensureSystemJob("heartbeat", spec(1800));
    expect(first).toMatchObject({ system: "heartbeat", nextRunAt: T0 + 1_800_000 });
    clock += 600_000;
    expect((await service.ensureSystemJob("heartbeat", spec(1800)))?.nextRunAt).toBe(T0 + 1_800_000);
    await service.setEnabled("heartbeat", false);
    expect((await service.ensureSystemJob("heartbeat", spec(1800)))?.enabled).toBe(false);
    expect((await service.ensureSystemJob("heartbeat", spec(60)))).toMatchObject({ enabled: true, nextRunAt: clock + 60_000 });
    expect(await service.remove("heartbeat")).toBe("protected");
    await service.ensureSystemJob("heartbeat", null);
    expect(await getJob(store, "heartbeat")).toBeUndefined();
  });
});
