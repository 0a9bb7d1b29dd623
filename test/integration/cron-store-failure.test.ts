/** A supervised child that fails (here cron, on a store error) is restarted by the supervisor; its failure never reaches the process (the gateway would exit). */
import { describe, expect, it } from "vitest";
import type { Daemon } from "../../src/daemon-types.js";
import type { Store } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { startDaemon } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { catchingUncaught } from "../helpers/uncaught.js";

/** Makes the store's next list of the cron sublevel fail, as a disk error would. */
function failNextCronList(store: Store): void {
  const list = store.list.bind(store);
  let armed = true;
  store.list = (async (...args: Parameters<Store["list"]>) => {
    if (armed && args[0] === "cron") {
      armed = false;
      throw new Error("disk on fire (cron)");
    }
    return list(...args);
  }) as Store["list"];
}

describe("the cron scheduler failing on a store error", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let daemon: Daemon | undefined;
  closeAfterEach(() => [daemon, fake]);

  it("is restarted by the supervisor; nothing is thrown at the process", async () => {
    await catchingUncaught(async (uncaught) => {
      fake = await startFakeOpenAi([{ content: "x" }]);
      daemon = await startDaemon(await tmp(), fake.url);
      const d = daemon;
      const cronRecord = () => (d.supervisor.getSnapshot().context as { children: Record<string, { status: string; failures: number[] }> }).children["cron"];
      await until(() => cronRecord()?.status === "running", 10_000, "cron running");
      failNextCronList(d.store);
      d.supervisor.send({ type: "cron.changed" });
      await until(() => (cronRecord()?.failures.length ?? 0) > 0, 10_000, "the cron failure seen by the supervisor");
      await new Promise((r) => setTimeout(r, 200));
      expect(uncaught.map((e) => String(e))).toEqual([]);
    });
  });
});
