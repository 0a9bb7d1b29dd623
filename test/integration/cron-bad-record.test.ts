import { describe, expect, it } from "vitest";
import { getJob, putJobOps } from "../../src/cron/jobs.js";
import { createCronService } from "../../src/cron/service.js";
import type { CorruptRecord } from "../../src/store/store.js";
import { openStore } from "../../src/store/store.js";
import { cronTool } from "../../src/tools/builtin/cron.js";
import { useTempDirs } from "../helpers/tmp.js";

describe("a cron job record that does not parse (everyS past 2^53, as an unchecked `every` once stored)", () => {
  const tmp = useTempDirs();

  /** A store holding a good job and a bad one, read back by a fresh open (so the bad one is checked). */
  async function storeWithBadJob(dir: string) {
    const first = await openStore(dir);
    const service = createCronService({ store: first, defaultTz: "UTC" });
    const good = service.buildJob({ id: "good", name: "good", message: "m", everySeconds: 60, target: { channel: "api", chatId: "c" } }, Date.now());
    const bad = { ...service.buildJob({ id: "bad", name: "big", message: "m", everySeconds: 60, target: { channel: "api", chatId: "c" } }, Date.now()), schedule: { kind: "every" as const, everyS: 1e308 } };
    await first.batch([...putJobOps(good), ...putJobOps(bad)], { sync: true });
    await first.close();
    return openStore(dir);
  }

  it("list skips it and warns once; remove still removes it; the cron tool lists the rest and names it", async () => {
    const dir = await tmp();
    const store = await storeWithBadJob(dir);
    try {
      const warned: CorruptRecord[] = [];
      const service = createCronService({ store, defaultTz: "UTC", warn: (r) => warned.push(r) });
      expect((await service.list()).map((j) => j.id)).toEqual(["good"]);
      expect(warned).toEqual([{ sublevel: "cron", key: "job:bad", problem: expect.stringMatching(/^schedule\.everyS: /) as string }]);

      const tool = cronTool({ service: async () => service, defaultTz: "UTC" });
      const listed = String(await tool.execute({ action: "list" }, { sessionKey: "api:c", channel: "api", chatId: "c", idempotencyKey: "k" } as never));
      expect(listed).toContain("- good (id: good, every 1m)");
      expect(listed).toMatch(/job:bad .*action=remove job_id=bad/);

      expect(await service.remove("bad")).toBe("removed");
      expect(await service.remove("bad")).toBe("missing");
      warned.length = 0;
      expect((await service.list()).map((j) => j.id)).toEqual(["good"]);
      expect(warned).toEqual([]);
      expect(await getJob(store, "good")).toMatchObject({ id: "good" });
    } finally {
      await store.close();
    }
  });
});
