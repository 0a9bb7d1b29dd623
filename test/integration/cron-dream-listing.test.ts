import { Level } from "level";
import { describe, expect, it } from "vitest";
import { createAgentRuntime } from "../../src/agent-runtime.js";
import { loadConfig } from "../../src/config/load.js";
import { dreamCronJob } from "../../src/cron/dream-job.js";
import { createCronService } from "../../src/cron/service.js";
import { openStore, type CorruptRecord } from "../../src/store/store.js";
import { writeHome } from "../helpers/home.js";
import { useTempDirs } from "../helpers/tmp.js";

/** Dream in the cron listings: the daemon's, `troupe cron`'s and an in-process `troupe agent`'s alike. */
describe("Dream as a cron system job", () => {
  const tmp = useTempDirs();

  it("an in-process agent's cron tool lists Dream as a protected system job, as the daemon's does", async () => {
    const home = await tmp();
    await writeHome(home, "http://127.0.0.1:9/v1");
    const runtime = await createAgentRuntime(await loadConfig({ TROUPE_HOME: home }), {});
    try {
      const service = await runtime.cronJobs();
      expect((await service.listing()).jobs.map((j) => [j.id, j.system])).toEqual([["dream", "dream"]]);
      expect(await service.remove("dream")).toBe("protected");
    } finally {
      await runtime.close();
    }
  });

  it("lists no Dream when Dream is off", async () => {
    const home = await tmp();
    await writeHome(home, "http://127.0.0.1:9/v1", { config: { agents: { defaults: { dream: { enabled: false } } } } });
    const runtime = await createAgentRuntime(await loadConfig({ TROUPE_HOME: home }), {});
    try {
      expect((await (await runtime.cronJobs()).listing()).jobs).toEqual([]);
      expect(await (await runtime.cronJobs()).remove("dream")).toBe("missing");
    } finally {
      await runtime.close();
    }
  });

  it("a Dream record that does not read is named, and the stored jobs and Dream are still listed", async () => {
    const dir = await tmp();
    const first = await openStore(dir);
    const service = createCronService({ store: first, defaultTz: "UTC" });
    await service.add({ id: "good", name: "good", message: "m", everySeconds: 60, target: { channel: "api", chatId: "c" } });
    await first.close();
    const raw = new Level<string, string>(dir);
    await raw.sublevel<string, string>("meta", { valueEncoding: "utf8" }).put("dream", "{");
    await raw.close();

    const store = await openStore(dir);
    try {
      const warned: CorruptRecord[] = [];
      const listing = await createCronService({ store, defaultTz: "UTC", warn: (r) => warned.push(r), dream: dreamCronJob({ enabled: true, intervalH: 2 }, store) }).listing();
      expect(listing.jobs.map((j) => [j.id, j.nextRunAt])).toEqual([
        ["good", expect.any(Number)],
        // Its next run is not known without its record.
        ["dream", null],
      ]);
      expect(listing.corrupt).toEqual([{ sublevel: "meta", key: "dream", problem: "not valid JSON" }]);
      expect(warned).toEqual(listing.corrupt);
    } finally {
      await store.close();
    }
  });
});
