import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { Daemon } from "../../src/daemon-types.js";
import { openStore } from "../../src/store/store.js";
import { listOpenTurns } from "../../src/store/turns.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { sendApi as send, startDaemon } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { catchingUncaught } from "../helpers/uncaught.js";

describe("an interrupted turn that cannot be restored (a state this troupe does not have)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let daemon: Daemon | undefined;
  closeAfterEach(() => [daemon, fake]);

  it("fails its session (the supervisor restarts it, then marks it failed); the process is not taken down", async () => {
    await catchingUncaught(async (uncaught) => {
      fake = await startFakeOpenAi([], () => ({ content: "slow", delayMs: 10_000 }));
      const dir = await tmp();
      daemon = await startDaemon(dir, fake.url, {}, { shutdownGraceMs: 50 });
      const storeDir = daemon.loaded.paths.storeDir;
      await send(daemon, "r", "think");
      await until(() => fake!.requests.length === 1, 10_000, "the first model call");
      await daemon.shutdown();
      daemon = undefined;
      // The interrupted turn's record names a state the machine does not have.
      const store = await openStore(storeDir);
      const [open] = await listOpenTurns(store);
      const record = (await store.get("turns", open!.turnId, z.any())) as { snapshot: { value: unknown } };
      record.snapshot.value = "no_such_state";
      await store.batch([{ type: "put", sublevel: "turns", key: open!.turnId, value: record }], { sync: true });
      await store.close();
      daemon = await startDaemon(dir, fake.url, {}, { shutdownGraceMs: 50, policy: { maxRestarts: 1 } });
      const d = daemon;
      const rec = () => (d.supervisor.getSnapshot().context as { children: Record<string, { status: string; lastError: string | null }> }).children["session:api:r"];
      // Restarted once (maxRestarts 1), it fails again on the same record and is marked failed.
      await until(() => rec()?.status === "failed", 20_000, "the session marked failed by the supervisor");
      expect(JSON.stringify(rec()?.lastError)).toMatch(/no_such_state/);
      // XState rethrows an unhandled actor error from a timer: give one the time to fire.
      await new Promise((r) => setTimeout(r, 300));
      expect(uncaught.map(String)).toEqual([]);
    });
  }, 60_000);
});
