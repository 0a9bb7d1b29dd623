import { filter } from "rxjs";
import { describe, expect, it } from "vitest";
import type { Daemon } from "../../src/daemon-types.js";
import { sessionDetail } from "../../src/store/session-view.js";
import { isSubagentRequest, startSubagentModel } from "../fixtures/subagent-model.js";
import type { FakeOpenAi } from "../fixtures/fake-openai.js";
import { replyTo, sendApi as send, startDaemon } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { toolCtx } from "../helpers/tools.js";
import { sleep, until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";


describe("subagents (in-process daemon, fake model)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let daemon: Daemon | undefined;
  closeAfterEach(() => [daemon, fake]);

  it("three subagents run in parallel and each report reaches the session and the user once", async () => {
    const model = await startSubagentModel({ subagentMs: 400 });
    fake = model.fake;
    daemon = await startDaemon(await tmp(), fake.url);
    const outbound: Array<{ content: string; answers: string[] }> = [];
    daemon.bus.ofType("outbound").pipe(filter((e) => e.chatId === "k")).subscribe((e) => outbound.push(e));
    const first = await send(daemon, "k", "please spawn 3");
    expect((await replyTo(daemon, first)).content).toBe("Started 3.");
    const resultIds = (await daemon.subagents.list("api:k")).map((r) => `subagent:${r.id}:result`);
    expect(resultIds).toHaveLength(3);
    while (!resultIds.every((id) => outbound.some((e) => e.answers.includes(id)))) await sleep(50);
    await sleep(300);
    // The three subagents' model calls were in flight together (timing is for the benchmark).
    expect(model.maxSubagentsInFlight()).toBe(3);
    // Each report was answered once, and entered the session's history once.
    for (const id of resultIds) expect(outbound.flatMap((e) => e.answers).filter((a) => a === id)).toHaveLength(1);
    const session = await sessionDetail(daemon.store, "api:k");
    const reports = session!.messages.filter((m) => m.role === "user" && String(m.content).startsWith("[Subagent result"));
    expect(reports.map((m) => /report on (t\d)/.exec(String(m.content))?.[1]).sort()).toEqual(["t1", "t2", "t3"]);
    expect(outbound.slice(1).every((e) => e.content.startsWith("Summary: report on t"))).toBe(true);
    expect(session!.subagents.map((a) => a.status)).toEqual(["responded", "responded", "responded"]);
  });

  it("runs at most maxConcurrentSubagents at once, queues the rest up to a bound, and refuses beyond it", async () => {
    const model = await startSubagentModel({ subagentMs: 300 });
    fake = model.fake;
    daemon = await startDaemon(await tmp(), fake.url, { defaults: { maxConcurrentSubagents: 1 } });
    const id = await send(daemon, "q", "please spawn 6");
    expect((await replyTo(daemon, id)).content).toBe("Started 6.");
    const toolResults = fake.requests.filter((r) => !isSubagentRequest(r))[1]!.body.messages.filter((m) => m.role === "tool").map((m) => String(m.content));
    expect(toolResults.slice(0, 5).every((t) => /^Subagent \[job \d\] started \(id: sa-[0-9a-f]{10}\)\./.test(t))).toBe(true);
    expect(toolResults.slice(1, 5).every((t) => t.includes("It is queued until a subagent slot frees up."))).toBe(true);
    expect(toolResults[5]).toMatch(/^Error: too many subagents waiting \(4, limit 4\)/);
    const statuses = await until(async () => {
      const all = (await daemon!.subagents.list("api:q")).map((r) => r.status);
      return all.every((st) => st === "responded") && all;
    }, 20_000, "every subagent to finish");
    expect(statuses).toEqual(["responded", "responded", "responded", "responded", "responded"]);
    expect(model.maxSubagentsInFlight()).toBe(1);
  });

  it("wait=true returns the report as the tool result; /stop cancels running subagents", async () => {
    const model = await startSubagentModel({ subagentMs: 200, wait: true });
    fake = model.fake;
    daemon = await startDaemon(await tmp(), fake.url);
    const id = await send(daemon, "w", "please spawn 1");
    expect((await replyTo(daemon, id)).content).toBe("Started 1.");
    const toolResult = fake.requests.filter((r) => !isSubagentRequest(r))[1]!.body.messages.find((m) => m.role === "tool");
    expect(toolResult?.content).toMatch(/^Subagent \[job 1\] \(sa-[0-9a-f]{10}\) finished: responded\.\n\nreport on t1$/);

    await daemon.shutdown();
    await fake.close();
    const slow = await startSubagentModel({ subagentMs: 5_000 });
    fake = slow.fake;
    daemon = await startDaemon(await tmp(), fake.url);
    const started = await send(daemon, "s", "please spawn 2");
    expect((await replyTo(daemon, started)).content).toBe("Started 2.");
    await sleep(100);
    // The subagents tool, as the model would call it from that session.
    const ctx = toolCtx(daemon.loaded.workspace, { sessionKey: "api:s", channel: "api", chatId: "s" });
    const listed = await daemon.registry.execute("subagents", { action: "list" }, ctx);
    expect(listed).toMatch(/^- (sa-[0-9a-f]{10}) \[job 1\] running \(awaiting_model\): t1\n- (sa-[0-9a-f]{10}) \[job 2\] running \(awaiting_model\): t2$/);
    const secondId = /job 2/.test(listed) ? /- (sa-\w+) \[job 2\]/.exec(listed)![1]! : "";
    expect(await daemon.registry.execute("subagents", { action: "cancel", id: secondId }, ctx)).toBe(`Subagent ${secondId} cancelled.`);
    expect(await daemon.registry.execute("subagents", { action: "cancel", id: "sa-nope" }, ctx)).toMatch(/^Error: no running or queued subagent sa-nope in this session/);
    await sleep(100);
    const stop = await send(daemon, "s", "/stop");
    expect((await replyTo(daemon, stop)).content).toBe("Cancelled 1 subagent(s).");
    await sleep(200);
    expect((await daemon.subagents.list("api:s")).map((r) => r.status)).toEqual(["cancelled", "cancelled"]);
  });
});
