import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { CorruptRecordError, StoreLockedError } from "../../src/errors.js";
import { createGroupCommit } from "../../src/store/group-commit.js";
import { openStore } from "../../src/store/store.js";
import { useTempDirs } from "../helpers/tmp.js";

const rec = z.object({ n: z.number() });

describe("store", () => {
  const tempDir = useTempDirs();

  it("writes one atomic batch across sublevels and parses records on read", async () => {
    const store = await openStore(join(await tempDir(), "store"));
    await store.batch(
      [
        { type: "put", sublevel: "inbox", key: "a", value: { n: 1 } },
        { type: "put", sublevel: "outbox", key: "a", value: { n: 2 } },
        { type: "put", sublevel: "sessions", key: "s:1", value: { n: 3 } },
        { type: "put", sublevel: "sessions", key: "s:2", value: { n: 4 } },
        { type: "put", sublevel: "sessions", key: "t:1", value: { n: 5 } },
      ],
      { sync: true },
    );
    expect(await store.get("inbox", "a", rec)).toEqual({ n: 1 });
    expect(await store.get("outbox", "a", rec)).toEqual({ n: 2 });
    expect(await store.get("journal", "a", rec)).toBeUndefined();
    expect((await store.list("sessions", rec, { prefix: "s:" })).map((r) => r.key)).toEqual(["s:1", "s:2"]);
    await store.batch([{ type: "del", sublevel: "inbox", key: "a" }]);
    expect(await store.get("inbox", "a", rec)).toBeUndefined();

    await store.batch([{ type: "put", sublevel: "meta", key: "bad", value: { n: "not a number" } }]);
    await expect(store.get("meta", "bad", rec)).rejects.toBeInstanceOf(CorruptRecordError);
    await store.close();
  });

  it("keeps data across close and reopen", async () => {
    const path = join(await tempDir(), "store");
    const a = await openStore(path);
    await a.batch([{ type: "put", sublevel: "cron", key: "job", value: { n: 7 } }], { sync: true });
    await a.close();
    const b = await openStore(path);
    expect(await b.get("cron", "job", rec)).toEqual({ n: 7 });
    await b.close();
  });

  it("group commit coalesces concurrent synced batches into fewer writes", async () => {
    const store = await openStore(join(await tempDir(), "store"));
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        store.batch([{ type: "put", sublevel: "turns", key: `k${i}`, value: { n: i } }], { sync: true }),
      ),
    );
    expect(store.commitStats.requests).toBe(50);
    expect(store.commitStats.writes).toBeLessThan(50);
    expect(store.commitStats.largestGroup).toBeGreaterThan(1);
    expect((await store.list("turns", rec)).length).toBe(50);
    await store.close();
  });

  it("group commit fails every request of a failed write and keeps going", async () => {
    let calls = 0;
    const gc = createGroupCommit<number>(async (ops) => {
      calls++;
      if (ops.includes(13)) throw new Error("disk full");
    });
    const results = await Promise.allSettled([gc.commit([1]), gc.commit([13]), gc.commit([2])]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "rejected"]);
    await gc.commit([3]);
    expect(calls).toBe(3);
  });

  it("names the process holding the store instead of LEVEL_LOCKED", async () => {
    const path = join(await tempDir(), "store");
    const holderScript = join(path, "..", "hold.mts");
    await writeFile(
      holderScript,
      `import { openStore } from ${JSON.stringify(new URL("../../src/store/store.ts", import.meta.url).pathname)};\n` +
        `await openStore(${JSON.stringify(path)});\nconsole.log("open");\nsetInterval(() => {}, 1000);\n`,
    );
    const child = spawn(process.execPath, ["--import", "tsx", holderScript], { stdio: ["ignore", "pipe", "inherit"] });
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.once("data", () => resolve());
        child.once("exit", (code) => reject(new Error(`holder exited early with ${code}`)));
      });
      const err = await openStore(path).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreLockedError);
      expect((err as Error).message).toBe(
        `another troupe process (pid ${child.pid}) holds ${path}; stop it first or use another TROUPE_HOME`,
      );
    } finally {
      child.kill("SIGKILL");
    }
  });
});
