import { describe, expect, it } from "vitest";
import type { Daemon } from "../../src/daemon-types.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { replyTo, sendApi as send, startDaemon } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { closeAfterEach } from "../helpers/teardown.js";

describe("a stalled model endpoint does not hold the daemon's turn slots", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let daemon: Daemon | undefined;
  closeAfterEach(() => [daemon, fake]);

  it.each([false, true])("a stalled call is abandoned after modelIdleTimeoutSeconds and retried; the next session then gets the slot (stream=%s)", async (stream) => {
    let stalled = 0;
    fake = await startFakeOpenAi([], (req) => {
      const chat = String(req.body.messages.at(-1)?.content).includes("stall once") ? "a" : "b";
      if (chat === "a" && stalled++ === 0) return { content: "never finished", stall: stream ? "midstream" : "headers" };
      return { content: `answer to ${chat}` };
    });
    // One slot: without the idle timeout the stalled call would hold it, and chat b would wait forever.
    daemon = await startDaemon(await tmp(), fake.url, { defaults: { maxConcurrentTurns: 1, modelIdleTimeoutSeconds: 0.5 } }, { stream });
    const a = await send(daemon, "a", "stall once");
    const b = await send(daemon, "b", "hello");
    const [replyA, replyB] = await Promise.all([replyTo(daemon, a), replyTo(daemon, b)]);
    expect(replyA.content).toBe("answer to a");
    expect(replyB.content).toBe("answer to b");
    expect(stalled).toBe(2);
    // a's stalled call, a's retry, then b: b waited for the slot, and got it once the stall was given up.
    expect(fake.requests.map((r) => String(r.body.messages.at(-1)?.content).includes("stall once"))).toEqual([true, true, false]);
    expect(fake.maxInFlight()).toBe(1);
  });
});
