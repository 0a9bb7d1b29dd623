import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { filter, firstValueFrom, type Observable } from "rxjs";
import { describe, expect, it } from "vitest";
import type { OutboundEvent } from "../../src/bus/events.js";
import { dreamSystemJob } from "../../src/cron/dream-job.js";
import { fireNow } from "../../src/cron/fire.js";
import { runLines } from "../../src/cli/cron.js";
import { getJob, listRuns, NO_CHAT, putJobOps, runMessageId } from "../../src/cron/jobs.js";
import { addJobInput } from "../../src/cron/requests.js";
import { createCronService } from "../../src/cron/service.js";
import { dataPaths } from "../../src/paths.js";
import { openStore } from "../../src/store/store.js";
import type { Daemon } from "../../src/daemon-types.js";
import { startFakeOpenAi, type FakeOpenAi, type RecordedRequest } from "../fixtures/fake-openai.js";
import { replyTo, sendApi, startDaemon, writeHome } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";

const lastUser = (req: RecordedRequest) => {
  const users = req.body.messages.filter((m) => m.role === "user");
  return String(users.at(-1)?.content ?? "");
};
const hasTool = (req: RecordedRequest, name: string) => (req.body.tools ?? []).some((t) => t.function.name === name);
/** Tool results since the last user message (this turn's). */
const toolResults = (req: RecordedRequest) => {
  const m = req.body.messages;
  const from = m.map((x) => x.role).lastIndexOf("user");
  return m.slice(from).filter((x) => x.role === "tool").map((x) => String(x.content));
};

/** Every outbound event from now on, collected. */
function collect(events: Observable<OutboundEvent>): OutboundEvent[] {
  const out: OutboundEvent[] = [];
  events.subscribe((e) => out.push(e));
  return out;
}

describe("cron in the daemon (fake model)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let daemon: Daemon | undefined;
  closeAfterEach(() => [daemon, fake]);

  it("an at reminder fires, its reply reaches the API chat once, and the job is deleted", async () => {
    fake = await startFakeOpenAi([], (req) => (lastUser(req).includes("drink water") ? { content: "Time to drink water!" } : { content: "?" }));
    daemon = await startDaemon(await tmp(), fake.url, { config: { gateway: { heartbeat: { enabled: false } } } });
    const outbound = collect(daemon.bus.ofType("outbound"));
    const job = await daemon.cron.add({ message: "Remind me to drink water", at: new Date(Date.now() + 1_500).toISOString(), target: { channel: "api", chatId: "api:me" } });
    const reply = await firstValueFrom(daemon.bus.ofType("outbound").pipe(filter((e) => e.answers.some((a) => a.startsWith(`cron:${job.id}:`)))));
    expect(reply).toMatchObject({ channel: "api", chatId: "api:me", content: "Time to drink water!" });
    expect(reply.answers).toEqual([runMessageId(job.id, (job.schedule as { atMs: number }).atMs)]);
    await until(async () => (await getJob(daemon!.store, job.id)) === undefined, 10_000, "the at job to be deleted");
    const runs = await listRuns(daemon.store, job.id);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ status: "ok", reply: "Time to drink water!", missed: 0, trigger: "schedule" });
    expect(outbound.filter((e) => e.content === "Time to drink water!")).toHaveLength(1);
  }, 30_000);

  it("the cron tool adds a job from a chat, lists it in nanobot's words, and a run cannot add jobs", async () => {
    fake = await startFakeOpenAi([], (req) => {
      const user = lastUser(req);
      const results = toolResults(req);
      if (user.includes("every 90 seconds") && !results.length) return { toolCalls: [{ name: "cron", arguments: { action: "add", message: "stretch", every_seconds: 90, name: "stretch" } }] };
      if (user.includes("what is scheduled") && !results.length) return { toolCalls: [{ name: "cron", arguments: { action: "list" } }] };
      if (user.includes("stretch") && user.includes("[Scheduled job") && !results.length) {
        return { toolCalls: [{ name: "cron", arguments: { action: "add", message: "more", every_seconds: 60 } }] };
      }
      return { content: `done: ${results.join(" | ")}` };
    });
    daemon = await startDaemon(await tmp(), fake.url, { config: { gateway: { heartbeat: { enabled: false } } } });
    const added = await replyTo(daemon, await sendApi(daemon, "c1", "remind me every 90 seconds to stretch"));
    expect(added.content).toMatch(/Created job 'stretch' \(id: [0-9a-f]{8}, every 90s\)/);
    const [job] = await daemon.cron.list();
    expect(job).toMatchObject({ name: "stretch", target: { channel: "api", chatId: "c1" }, createdBy: "api:c1", catchUp: "once" });
    const listed = await replyTo(daemon, await sendApi(daemon, "c1", "what is scheduled?"));
    expect(listed.content).toContain(`- stretch (id: ${job!.id}, every 90s)`);
    expect(listed.content).toContain("Next run:");

    // Run by hand: the run's turn tries to add a job and is refused.
    const started = await daemon.runCronJob(job!.id);
    const runReply = await firstValueFrom(daemon.bus.ofType("outbound").pipe(filter((e) => e.answers.includes(started!.run.messageId!))));
    expect(runReply.chatId).toBe("c1");
    expect(runReply.content).toContain("cannot schedule new jobs from within a cron job run");
    expect(await daemon.cron.list()).toHaveLength(1);
    await until(async () => (await listRuns(daemon!.store, job!.id))[0]?.status === "ok", 10_000, "the manual run to be recorded");
  }, 30_000);

  // nanobot tests/cron/test_cron_tool_list.py: test_list_includes_protected_dream_system_job_with_memory_purpose,
  // test_remove_protected_dream_job_returns_clear_feedback (troupe schedules Dream every intervalH hours).
  it("the cron tool lists Dream as a protected system job and refuses to remove it; disabled, Dream is not a job", async () => {
    fake = await startFakeOpenAi([], (req) => {
      const user = lastUser(req);
      const results = toolResults(req);
      if (user.includes("what is scheduled") && !results.length) return { toolCalls: [{ name: "cron", arguments: { action: "list" } }] };
      if (user.includes("remove dream") && !results.length) return { toolCalls: [{ name: "cron", arguments: { action: "remove", job_id: "dream" } }] };
      return { content: `done: ${results.join(" | ")}` };
    });
    daemon = await startDaemon(await tmp(), fake.url, { config: { gateway: { heartbeat: { enabled: false } } } });
    const listed = (await replyTo(daemon, await sendApi(daemon, "c1", "what is scheduled?"))).content;
    expect(listed).toContain("- dream (id: dream, every 2h)");
    expect(listed).toContain("Dream memory consolidation for long-term memory.");
    expect(listed).toContain("cannot be removed");
    const removed = (await replyTo(daemon, await sendApi(daemon, "c1", "remove dream"))).content;
    expect(removed).toContain("Cannot remove job `dream`.");
    expect(removed).toContain("Dream memory consolidation job for long-term memory");
    expect(removed).toContain("cannot be removed");
    expect((await replyTo(daemon, await sendApi(daemon, "c1", "what is scheduled now?"))).content).toContain("- dream (id: dream, every 2h)");
    await daemon.shutdown();

    daemon = await startDaemon(await tmp(), fake.url, { config: { agents: { defaults: { dream: { enabled: false } } }, gateway: { heartbeat: { enabled: false } } } });
    expect((await replyTo(daemon, await sendApi(daemon, "c2", "what is scheduled?"))).content).toContain("No scheduled jobs.");
    expect((await replyTo(daemon, await sendApi(daemon, "c2", "remove dream"))).content).toContain("job dream not found");
  }, 30_000);

  // nanobot tests/cron/test_cron_service.py test_remove_job_refuses_system_jobs: Dream is listed and stays.
  it("the cron service (troupe cron's, the control API's) lists Dream as a system job and refuses to remove or pause it", async () => {
    const store = await openStore(await tmp());
    try {
      const dream = dreamSystemJob(2, { nextAt: 7_200_000, lastRun: null });
      const service = createCronService({ store, defaultTz: "UTC", dream: async () => ({ job: dream }) });
      expect((await service.listing()).jobs).toEqual([dream]);
      expect(await service.list()).toEqual([]);
      expect(await service.get("dream")).toEqual(dream);
      expect(await service.remove("dream")).toBe("protected");
      await expect(service.setEnabled("dream", false)).rejects.toThrow(/^dream is a system job with its own schedule: .*agents\.defaults\.dream\.enabled/);
      expect((await service.listing()).jobs).toEqual([dream]);
      // Dream off: no such job.
      const off = createCronService({ store, defaultTz: "UTC" });
      expect([(await off.listing()).jobs, await off.remove("dream")]).toEqual([[], "missing"]);
    } finally {
      await store.close();
    }
  });

  it("deliver false: the run happens, its reply is kept out of the chat", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "quiet result" }));
    daemon = await startDaemon(await tmp(), fake.url, { config: { gateway: { heartbeat: { enabled: false } } } });
    const outbound = collect(daemon.bus.ofType("outbound"));
    const job = await daemon.cron.add({ message: "check quietly", everySeconds: 3600, deliver: false, target: { channel: "api", chatId: "c2" } });
    await daemon.runCronJob(job.id);
    await until(async () => (await listRuns(daemon!.store, job.id))[0]?.status === "ok", 10_000, "the run to finish");
    expect((await listRuns(daemon.store, job.id))[0]!.reply).toBe("quiet result");
    expect(outbound).toEqual([]);
  }, 30_000);

  it("the heartbeat: nothing in HEARTBEAT.md asks nothing; skip sends nothing; run reports to the last chat", async () => {
    let decision: "skip" | "run" = "skip";
    let decided = 0;
    fake = await startFakeOpenAi([], (req) => {
      if (hasTool(req, "heartbeat") && req.body.tools!.length === 1) {
        decided++;
        const action = decision;
        if (decision === "run") decision = "skip";
        return { toolCalls: [{ name: "heartbeat", arguments: action === "run" ? { action, tasks: "check the oven" } : { action } }] };
      }
      if (lastUser(req).includes("[Heartbeat.")) return { content: "The oven is off." };
      return { content: "hello back" };
    });
    const home = await tmp();
    await mkdir(join(home, "workspace"), { recursive: true });
    await writeFile(join(home, "workspace", "HEARTBEAT.md"), "# Heartbeat Tasks\n\n<!-- tasks go below -->\n\n## Active Tasks\n\n");
    daemon = await startDaemon(home, fake.url, { config: { gateway: { heartbeat: { intervalS: 1 } } } });
    const outbound = collect(daemon.bus.ofType("outbound"));
    expect((await daemon.cron.list()).find((j) => j.id === "heartbeat")).toMatchObject({ system: "heartbeat", schedule: { kind: "every", everyS: 1 } });
    expect(await daemon.cron.remove("heartbeat")).toBe("protected");

    await until(async () => (await listRuns(daemon!.store, "heartbeat")).some((r) => r.note === "HEARTBEAT.md has no tasks"), 15_000, "a heartbeat with no tasks");
    expect(decided).toBe(0);

    await replyTo(daemon, await sendApi(daemon, "me", "hi"));
    await writeFile(join(home, "workspace", "HEARTBEAT.md"), "## Active Tasks\n\n- check the oven every hour\n");
    await until(async () => (await listRuns(daemon!.store, "heartbeat")).some((r) => r.status === "skipped" && r.note === "nothing to do now"), 15_000, "a skipped heartbeat");
    expect(outbound.filter((e) => e.chatId === "me")).toHaveLength(1);

    decision = "run";
    const report = await firstValueFrom(daemon.bus.ofType("outbound").pipe(filter((e) => e.answers.some((a) => a.startsWith("cron:heartbeat:")))));
    expect(report).toMatchObject({ channel: "api", chatId: "me", content: "The oven is off." });
    await until(async () => (await listRuns(daemon!.store, "heartbeat")).some((r) => r.status === "ok" && r.reply === "The oven is off."), 10_000, "the heartbeat run recorded");
  }, 60_000);

  it("the heartbeat session keeps only its last keepRecentMessages messages", async () => {
    let runs = 0;
    fake = await startFakeOpenAi([], (req) => {
      if (hasTool(req, "heartbeat") && req.body.tools!.length === 1) return { toolCalls: [{ name: "heartbeat", arguments: { action: "run", tasks: "t" } }] };
      if (lastUser(req).includes("[Heartbeat.")) return { content: `report ${++runs}` };
      return { content: "hello back" };
    });
    const home = await tmp();
    await mkdir(join(home, "workspace"), { recursive: true });
    await writeFile(join(home, "workspace", "HEARTBEAT.md"), "## Active Tasks\n- look around\n");
    daemon = await startDaemon(home, fake.url, { config: { gateway: { heartbeat: { intervalS: 1, keepRecentMessages: 2 } } } });
    await replyTo(daemon, await sendApi(daemon, "me", "hi"));
    await until(() => runs >= 4, 30_000, "four heartbeat reports");
    await until(async () => (await listRuns(daemon!.store, "heartbeat")).filter((r) => r.status === "ok").length >= 4, 10_000, "four heartbeat runs recorded");
    // Each phase-2 turn sees at most the last 2 stored messages before its own: one earlier exchange, never all of them.
    const phase2 = fake.requests.filter((r) => lastUser(r).includes("[Heartbeat."));
    const last = phase2.at(-1)!.body.messages.filter((m) => m.role !== "system");
    expect(last.length).toBeLessThanOrEqual(3);
    expect(JSON.stringify(last)).not.toContain("report 1");
  }, 60_000);

  it("troupe cron run without a daemon: the run is recorded and runs when the daemon starts; a job with no chat sends nothing", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "ran while nobody watched" }));
    const home = await tmp();
    await writeHome(home, fake.url, { config: { gateway: { heartbeat: { enabled: false } } } });
    const store = await openStore(dataPaths({ TROUPE_HOME: home }).storeDir);
    const job = await createCronService({ store, defaultTz: "UTC" }).add(addJobInput({ name: "n", message: "tidy up", every: 3600 }));
    expect(job).toMatchObject({ deliver: false, target: NO_CHAT });
    const queued = await fireNow(store, job.id, Date.now());
    await store.close();
    daemon = await startDaemon(home, fake.url, { config: { gateway: { heartbeat: { enabled: false } } } });
    const outbound = collect(daemon.bus.ofType("outbound"));
    await until(async () => (await listRuns(daemon!.store, job.id))[0]?.status === "ok", 20_000, "the queued run to finish");
    expect((await listRuns(daemon.store, job.id)).map((r) => [r.scheduledAt, r.trigger, r.reply])).toEqual([[queued!.run.scheduledAt, "manual", "ran while nobody watched"]]);
    expect(outbound).toEqual([]);
  }, 60_000);

  it("downtime across 5 instants: once runs one (4 missed), skip runs none, all runs five; each reply once", async () => {
    fake = await startFakeOpenAi([], (req) => ({ content: `done ${/\(id (\w+)\)/.exec(lastUser(req))?.[1] ?? "?"}` }));
    const home = await tmp();
    await writeHome(home, fake.url, { config: { gateway: { heartbeat: { enabled: false } } } });
    const store = await openStore(dataPaths({ TROUPE_HOME: home }).storeDir);
    const service = createCronService({ store, defaultTz: "UTC" });
    // Made 5.5 minutes ago, every minute: five instants passed while no daemon ran; the sixth is 30 s away.
    const made = Date.now() - 330_000;
    const ids: Record<string, string> = {};
    for (const catchUp of ["once", "skip", "all"]) {
      const job = service.buildJob({ name: catchUp, message: `policy ${catchUp}`, everySeconds: 60, catchUp, target: { channel: "api", chatId: `c-${catchUp}` } }, made);
      await store.batch(putJobOps(job), { sync: true });
      ids[catchUp] = job.id;
    }
    await store.close();
    daemon = await startDaemon(home, fake.url, { config: { gateway: { heartbeat: { enabled: false } } } });
    const outbound = collect(daemon.bus.ofType("outbound"));
    const runsOf = (policy: string) => listRuns(daemon!.store, ids[policy]!);
    await until(async () => (await runsOf("all")).filter((r) => r.status === "ok").length === 5 && (await runsOf("once"))[0]?.status === "ok", 30_000, "the catch-up runs");
    expect((await runsOf("once")).map((r) => [r.status, r.missed, r.scheduledAt - made])).toEqual([["ok", 4, 300_000]]);
    expect((await runsOf("skip")).map((r) => [r.status, r.scheduledAt - made])).toEqual([1, 2, 3, 4, 5].map((i) => ["skipped", i * 60_000]));
    expect((await runsOf("all")).map((r) => [r.status, r.scheduledAt - made])).toEqual([1, 2, 3, 4, 5].map((i) => ["ok", i * 60_000]));
    const to = (chat: string) => outbound.filter((e) => e.chatId === chat).length;
    await until(() => to("c-all") === 5, 10_000, "the five replies of all");
    expect([to("c-once"), to("c-skip"), to("c-all")]).toEqual([1, 0, 5]);
    // Nothing silently dropped: troupe cron runs shows the skipped instants.
    expect(runLines(await runsOf("skip")).filter((l) => l.includes("skipped"))).toHaveLength(5);
    for (const policy of ["once", "skip", "all"]) expect((await getJob(daemon.store, ids[policy]!))?.nextRunAt).toBe(made + 360_000);
  }, 60_000);
});
