import { describe, expect, it } from "vitest";
import { dataPaths } from "../../src/paths.js";
import { inboxRecordSchema } from "../../src/store/inbox.js";
import { openStore } from "../../src/store/store.js";
import { nextStep } from "../fixtures/effects-model.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { writeGatewayHome } from "../helpers/daemon.js";
import { getJson, sendMessage, startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";

interface Reply {
  answers: string[];
  content: string;
}

/**
 * What the kill sweep (kill-sweep.test.ts) found at a random instant, made deterministic: a message
 * injected into a turn while its last model call runs, then SIGKILL before the turn ends.
 */
describe("a message injected into a turn, then SIGKILL (real gateway processes)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let gateway: GatewayProcess | undefined;
  closeAfterEach(() => [gateway, fake]);

  it("injected during the turn's final model call and killed: after restart it is answered", async () => {
    // The model of fixtures/effects-model.ts; session a's first reply call is held (never answers), so
    // the test knows the turn is in its final model call; session b's calls tell when a checkpoint is durable.
    let heldReplies = 0;
    let callsOfB = 0;
    fake = await startFakeOpenAi([], async (req, index) => {
      const step = nextStep(req.body.messages, index);
      const forB = JSON.stringify(req.body.messages).includes("job-b0");
      if (forB) callsOfB++;
      if (!forB && step.content && ++heldReplies === 1) await new Promise(() => {});
      return step;
    });
    const home = await tmp();
    await writeGatewayHome(home, fake.url);
    const g = (gateway = await startGateway(home));

    const first = await sendMessage(g, "api:a", "please do job-a0").accepted;
    await until(() => heldReplies === 1, 20_000, "session a's final model call");
    const second = await sendMessage(g, "api:a", "please do job-a1").accepted;
    // The injection is checkpointed when the turn takes the event; session b's first model call waits
    // for b's first checkpoint, written after it (one ordered store), so once it comes both are durable.
    void sendMessage(g, "api:b", "please do job-b0").accepted;
    await until(() => callsOfB >= 1, 20_000, "session b's first model call");
    g.proc.kill("SIGKILL");
    await g.exited;
    expect(first).toBeDefined();
    expect(second).toBeDefined();

    const g2 = (gateway = await startGateway(home));
    const answered = async () => new Set((await getJson<{ replies: Reply[] }>(g2, "/api/sessions/api:a/replies")).replies.flatMap((r) => r.answers));
    await until(async () => (await answered()).has(first!), 20_000, "the first message's reply");
    const both = await until(async () => ((await answered()).has(second!) ? true : undefined), 10_000, "the injected message's reply").catch(() => false);
    let inbox: string[] = [];
    if (!both) {
      g2.proc.kill("SIGTERM");
      await g2.exited;
      gateway = undefined;
      const store = await openStore(dataPaths({ TROUPE_HOME: home }).storeDir);
      inbox = (await store.list("inbox", inboxRecordSchema)).map((r) => `${r.value.id}: ${r.value.content}`);
      await store.close();
    }
    expect(both, `the injected message ${second} was never answered; the inbox holds ${JSON.stringify(inbox)}`).toBe(true);
  }, 90_000);
});
