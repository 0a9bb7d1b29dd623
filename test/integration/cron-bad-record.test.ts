import { Level } from "level";
import { describe, expect, it } from "vitest";
import { fireNow } from "../../src/cron/fire.js";
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

  // nanobot tests/cron/test_cron_persistence.py test_public_apis_raise_clear_error_for_unavailable_corrupt_store:
  // every call on a record that does not read (not JSON, as a torn write leaves it, or off its schema) says
  // so and how to get out of it, instead of failing on the way; remove still removes it.
  it("get, enable, disable and run say the record cannot be read and that troupe cron remove removes it", async () => {
    const dir = await tmp();
    await (await storeWithBadJob(dir)).close();
    const raw = new Level<string, string>(dir);
    await raw.sublevel<string, string>("cron", { valueEncoding: "utf8" }).put("job:torn", "{not valid json");
    await raw.close();
    const store = await openStore(dir);
    try {
      const service = createCronService({ store, defaultTz: "UTC" });
      const calls: Record<string, (id: string) => Promise<unknown>> = {
        get: (id) => service.get(id),
        enable: (id) => service.setEnabled(id, true),
        disable: (id) => service.setEnabled(id, false),
        run: (id) => fireNow(store, id, Date.now()),
      };
      for (const [name, call] of Object.entries(calls)) {
        await expect(call("bad"), name).rejects.toThrow(/^cron job bad cannot be read \(record cron\/job:bad does not match its schema: schedule\.everyS: .*\); troupe cron remove bad removes it$/);
        await expect(call("torn"), name).rejects.toThrow("cron job torn cannot be read (record cron/job:torn does not match its schema: not valid JSON); troupe cron remove torn removes it");
      }
      expect([await service.remove("bad"), await service.remove("torn")]).toEqual(["removed", "removed"]);
      expect(await service.get("bad")).toBeUndefined();
    } finally {
      await store.close();
    }
  });
});
