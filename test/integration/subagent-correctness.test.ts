import { describe, expect, it } from "vitest";
import type { Daemon } from "../../src/daemon-types.js";
import { getSubagent, isFinished } from "../../src/store/subagents.js";
import { isSubagentRequest, startSubagentModel } from "../fixtures/subagent-model.js";
import type { FakeOpenAi } from "../fixtures/fake-openai.js";
import { replyTo, sendApi as send, startDaemon } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";

describe("subagents: what the model is told, and waiting", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let daemon: Daemon | undefined;
  closeAfterEach(() => [daemon, fake]);

  it("spawn says queued only when no slot was free", async () => {
    const model = await startSubagentModel({ subagentMs: 200 });
    fake = model.fake;
    daemon = await startDaemon(await tmp(), fake.url, { defaults: { maxConcurrentSubagents: 1 } });
    const id = await send(daemon, "sq", "please spawn 2");
    await replyTo(daemon, id);
    const main = fake.requests.find((r) => !isSubagentRequest(r) && r.body.messages.some((m) => m.role === "tool"))!;
    const toolResults = main.body.messages.filter((m) => m.role === "tool").map((m) => String(m.content));
    expect(toolResults).toHaveLength(2);
    expect(toolResults[0]).toMatch(/started/);
    expect(toolResults[0]).not.toMatch(/queued/);
    expect(toolResults[1]).toMatch(/queued until a subagent slot frees up/);
  });

  it("wait does not miss a subagent that finishes while its record is being read", async () => {
    const model = await startSubagentModel({ subagentMs: 100 });
    fake = model.fake;
    daemon = await startDaemon(await tmp(), fake.url);
    const origin = { sessionKey: "api:w", channel: "api", chatId: "w", turnId: "t" };
    const { record } = await daemon.subagents.spawn({ key: "k-wait", task: "t1", label: "one", wait: true, origin });
    const store = daemon.store;
    const get = store.get.bind(store);
    // The read sees the subagent running, and returns only after it has finished and settled.
    store.get = (async (sublevel, key, schema) => {
      const value = await get(sublevel, key, schema);
      if (sublevel === "subagents") {
        await until(async () => isFinished((await getSubagent({ ...store, get }, record.id))!), 10_000, "the subagent to finish");
        await new Promise((r) => setTimeout(r, 50));
      }
      return value;
    }) as typeof store.get;
    const waited = daemon.subagents.wait(record.id, new AbortController().signal);
    const outcome = await Promise.race([waited, new Promise((r) => setTimeout(() => r("stuck"), 5_000))]);
    store.get = get;
    expect(outcome).toMatchObject({ id: record.id, status: "responded" });
  });
});
