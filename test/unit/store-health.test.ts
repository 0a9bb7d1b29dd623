import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { classifyStoreError, StoreUnavailableError } from "../../src/store/health.js";
import { floorBytes, lowSpaceLine } from "../../src/store/disk.js";
import { useTempDirs } from "../helpers/tmp.js";

const rec = z.object({ n: z.number() });

describe("classifyStoreError", () => {
  it("tells a full disk, a read-only one and an I/O error from other errors, as LevelDB and the file system word them", () => {
    const level = (message: string) => Object.assign(new Error(message), { code: "LEVEL_IO_ERROR" });
    expect(classifyStoreError(level("IO error: /d/store/000007.ldb: No space left on device"))).toBe("disk-full");
    expect(classifyStoreError(Object.assign(new Error("write failed"), { code: "ENOSPC" }))).toBe("disk-full");
    expect(classifyStoreError(level("IO error: /d/store/000003.log: Read-only file system"))).toBe("read-only");
    expect(classifyStoreError(level("IO error: /d/store/000003.log: Input/output error"))).toBe("io-error");
    expect(classifyStoreError(new Error("wrapped", { cause: level("IO error: x: No space left on device") }))).toBe("disk-full");
    expect(classifyStoreError(new Error("record does not match its schema"))).toBeUndefined();
    expect(classifyStoreError(Object.assign(new Error("Database is not open"), { code: "LEVEL_DATABASE_NOT_OPEN" }))).toBeUndefined();
  });

  it("a refusal names the cause and when to retry, never a path; 507 for a full disk, 503 otherwise", () => {
    const full = new StoreUnavailableError("disk-full");
    expect(full.status).toBe(507);
    expect(full.message).toMatch(/the disk is full.*retry later/);
    expect(full.message).not.toMatch(/\//);
    expect(new StoreUnavailableError("read-only").status).toBe(503);
  });
});

describe("free-space floor", () => {
  const MB = 1024 * 1024;
  it("is the configured MB or share of the disk, whichever is smaller", () => {
    expect(floorBytes({ free: 0, size: 100_000 * MB }, { freeSpaceFloorMB: 200, freeSpaceFloorPercent: 5 })).toBe(200 * MB);
    expect(floorBytes({ free: 0, size: 1_000 * MB }, { freeSpaceFloorMB: 200, freeSpaceFloorPercent: 5 })).toBe(50 * MB);
    const floor = { freeSpaceFloorMB: 200, freeSpaceFloorPercent: 5 };
    expect(lowSpaceLine({ free: 300 * MB, size: 100_000 * MB }, floor, "/d")).toBeUndefined();
    expect(lowSpaceLine({ free: 100 * MB, size: 100_000 * MB }, floor, "/d")).toBe(
      "only 100 MB free on the disk holding /d (floor 200 MB, storage.freeSpaceFloorMB / freeSpaceFloorPercent): free space before it fills",
    );
  });
});

describe("a store on a failing disk (ENOSPC injected at its write path)", () => {
  const tempDir = useTempDirs();

  it("fails once, refuses writes at once while failing, probes, reopens, resumes, and keeps what was written", async () => {
    const dir = await tempDir();
    const flag = join(dir, "full.flag");
    vi.stubEnv("TROUPE_FAULT_DISK_FULL", flag);
    vi.resetModules();
    // fault.ts reads the variable when it is loaded.
    const { openStore } = await import("../../src/store/store.js");
    const health = await import("../../src/store/health.js");
    const store = await openStore(join(dir, "store"), { probe: { baseMs: 20, maxMs: 50 } });
    try {
      await store.batch([{ type: "put", sublevel: "inbox", key: "kept", value: { n: 1 } }], { sync: true });
      const states: string[] = [];
      store.health.onChange((s) => states.push(s.state));
      let recovered = 0;
      store.onRecovered(async () => {
        // While recovering, the store takes writes (the resumed turns write).
        await store.batch([{ type: "put", sublevel: "inbox", key: "during-recovery", value: { n: 3 } }], { sync: true });
        recovered++;
      });

      await writeFile(flag, "");
      const first = await store.batch([{ type: "put", sublevel: "inbox", key: "lost", value: { n: 2 } }], { sync: true }).catch((e: unknown) => e);
      expect(first).toBeInstanceOf(health.StoreUnavailableError);
      expect((first as InstanceType<typeof health.StoreUnavailableError>).failure).toBe("disk-full");
      expect(store.health.snapshot()).toMatchObject({ state: "failing", failure: "disk-full" });
      // Reads still work; writes are refused at once, also unsynced ones.
      expect(await store.get("inbox", "kept", rec)).toEqual({ n: 1 });
      await expect(store.batch([{ type: "put", sublevel: "inbox", key: "x", value: { n: 9 } }])).rejects.toBeInstanceOf(health.StoreUnavailableError);
      // Probes keep failing while the disk is full.
      await new Promise((r) => setTimeout(r, 200));
      expect(store.health.state).toBe("failing");
      expect(store.health.snapshot().probes).toBeGreaterThan(1);

      await rm(flag);
      await store.health.writable();
      await vi.waitFor(() => expect(store.health.state).toBe("ok"), { timeout: 10_000 });
      expect(states).toEqual(["failing", "recovering", "ok"]);
      expect(recovered).toBe(1);
      await store.batch([{ type: "put", sublevel: "inbox", key: "after", value: { n: 4 } }], { sync: true });
      expect((await store.list("inbox", rec)).map((r) => r.key)).toEqual(["after", "during-recovery", "kept"]);
    } finally {
      await store.close();
      vi.unstubAllEnvs();
    }
  });
});

describe("a damaged store", () => {
  const tempDir = useTempDirs();

  it("without its CURRENT file is refused before LevelDB could start an empty store over it; repairStore brings the records back, a copy kept aside", async () => {
    const { openStore } = await import("../../src/store/store.js");
    const { StoreDamagedError } = await import("../../src/store/damage.js");
    const { repairStore } = await import("../../src/store/repair.js");
    const dir = join(await tempDir(), "store");
    const store = await openStore(dir);
    await store.batch([{ type: "put", sublevel: "inbox", key: "kept", value: { n: 1 } }], { sync: true });
    await store.close();
    await rm(join(dir, "CURRENT"));

    const err = await openStore(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreDamagedError);
    expect((err as Error).message).toBe(`the store at ${dir} is damaged (its CURRENT file is missing); repair it with \`troupe doctor --repair\` (it copies the store aside first)`);

    const report = await repairStore(dir, new Date("2026-01-02T03:04:05.678Z"));
    expect(report.copy).toBe(`${dir}.damaged-2026-01-02T03-04-05-678Z`);
    const repaired = await openStore(dir);
    try {
      expect(await repaired.get("inbox", "kept", rec)).toEqual({ n: 1 });
    } finally {
      await repaired.close();
    }
  });
});
