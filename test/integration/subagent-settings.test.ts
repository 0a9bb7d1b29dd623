import { describe, expect, it } from "vitest";
import type { Daemon } from "../../src/daemon-types.js";
import { isSubagentRequest } from "../fixtures/subagent-model.js";
import { startFakeOpenAi, type FakeOpenAi, type RecordedRequest } from "../fixtures/fake-openai.js";
import { startDaemon } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { toolCtx } from "../helpers/tools.js";
import { getSubagent } from "../../src/store/subagents.js";

/** A subagent that calls list_dir as long as it is offered tools, then answers. */
const toolHungryModel = () =>
  startFakeOpenAi([], (req) => {
    if (!isSubagentRequest(req)) return { content: "main agent" };
    return req.body.tools?.length ? { toolCalls: [{ name: "list_dir", arguments: { path: "." } }] } : { content: "out of rounds" };
  });

const origin = { sessionKey: "api:s", channel: "api", chatId: "s", turnId: "t" };
const subagentRequests = (fake: FakeOpenAi) => fake.requests.filter(isSubagentRequest);
const withTools = (reqs: RecordedRequest[]) => reqs.filter((r) => r.body.tools?.length).length;
const systemPrompt = (req: RecordedRequest | undefined) => String(req?.body.messages[0]?.content);
const temperatureOf = (req: RecordedRequest) => (req.body as { temperature?: unknown }).temperature;

describe("subagents: tool-round limit (nanobot: subagents share the agent's max_iterations)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let daemon: Daemon | undefined;
  closeAfterEach(() => [daemon, fake]);

  async function runOne(defaults: Record<string, unknown>) {
    fake = await toolHungryModel();
    daemon = await startDaemon(await tmp(), fake.url, { defaults });
    const { record } = await daemon.subagents.spawn({ key: "k-limit", task: "list forever", label: "lister", wait: true, origin });
    return daemon.subagents.wait(record.id, new AbortController().signal);
  }

  it("without maxSubagentIterations a subagent gets agents.defaults.maxToolIterations (AgentLoop(max_iterations=42) → subagents 42)", async () => {
    const done = await runOne({ maxToolIterations: 3 });
    expect(done.status).toBe("max_iterations");
    expect(withTools(subagentRequests(fake!))).toBe(3);
    expect(systemPrompt(subagentRequests(fake!)[0])).toContain("at most 3 rounds of tool calls");
  });

  it("agents.defaults.maxSubagentIterations still overrides it", async () => {
    const done = await runOne({ maxToolIterations: 5, maxSubagentIterations: 2 });
    expect(done.status).toBe("max_iterations");
    expect(withTools(subagentRequests(fake!))).toBe(2);
    expect(systemPrompt(subagentRequests(fake!)[0])).toContain("at most 2 rounds of tool calls");
  });

  it("by default a subagent's limit is the agent default, 200 (test_subagent_default_max_iterations_matches_agent_defaults)", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "done at once" }));
    daemon = await startDaemon(await tmp(), fake.url);
    const { record } = await daemon.subagents.spawn({ key: "k-default", task: "say done", label: "quick", wait: true, origin });
    expect((await daemon.subagents.wait(record.id, new AbortController().signal)).status).toBe("responded");
    expect(systemPrompt(subagentRequests(fake)[0])).toContain("at most 200 rounds of tool calls");
  });
});

describe("spawn's temperature (nanobot: test_spawn_forwards_temperature_to_run_spec)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let daemon: Daemon | undefined;
  closeAfterEach(() => [daemon, fake]);

  const spawnCtx = (d: Daemon, callId: string) => toolCtx(d.loaded.workspace, { sessionKey: "api:s", channel: "api", chatId: "s", callId, idempotencyKey: `api:s:t:${callId}` });

  it("a subagent spawned with temperature 0.9 samples at 0.9; the agent and other subagents keep the configured 0.1", async () => {
    fake = await toolHungryModel();
    daemon = await startDaemon(await tmp(), fake.url, { defaults: { temperature: 0.1, maxToolIterations: 2 } });
    const hot = await daemon.registry.execute("spawn", { task: "list hot", label: "hot", temperature: 0.9, wait: true }, spawnCtx(daemon, "c1"));
    expect(hot).toMatch(/^Subagent \[hot\] \(sa-[0-9a-f]{10}\) finished: max_iterations\./);
    const hotRequests = subagentRequests(fake);
    expect(hotRequests.length).toBeGreaterThan(1);
    expect(hotRequests.map(temperatureOf)).toEqual(hotRequests.map(() => 0.9));
    // Kept with the subagent, so a subagent resumed after a restart samples as it began.
    const id = /\((sa-[0-9a-f]{10})\)/.exec(hot)![1]!;
    expect((await getSubagent(daemon.store, id))?.temperature).toBe(0.9);

    await daemon.registry.execute("spawn", { task: "list plain", label: "plain", wait: true }, spawnCtx(daemon, "c2"));
    const plainRequests = subagentRequests(fake).slice(hotRequests.length);
    expect(plainRequests.length).toBeGreaterThan(0);
    expect(plainRequests.map(temperatureOf)).toEqual(plainRequests.map(() => 0.1));
  });

  it("a temperature outside 0–2 is refused with a tool error saying the range", async () => {
    fake = await toolHungryModel();
    daemon = await startDaemon(await tmp(), fake.url);
    for (const bad of [2.5, -0.1]) {
      const out = await daemon.registry.execute("spawn", { task: "t", temperature: bad }, spawnCtx(daemon, `bad${bad}`));
      expect(out).toMatch(/^Error: invalid arguments for spawn: temperature: .*between 0 and 2/);
    }
    expect(await daemon.subagents.list("api:s")).toEqual([]);
  });
});
