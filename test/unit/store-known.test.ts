import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { CorruptRecordError } from "../../src/errors.js";
import { KEY_END } from "../../src/session-key.js";
import { inboxDeleteOps, inboxPutOps, sessionInbox, type InboxRecord } from "../../src/store/inbox.js";
import { createAbsenceFilter, createRangeMirror, createRecordCache } from "../../src/store/known.js";
import { appendMessagesOps, getSessionMeta, newSessionMeta } from "../../src/store/sessions.js";
import { openStore, type Store } from "../../src/store/store.js";
import { closeTurnOp, listOpenTurns, openTurnOp } from "../../src/store/turns.js";
import { useTempDirs } from "../helpers/tmp.js";

const leveldbReads = (store: Store) => [...Object.values(store.readStats.gets), ...Object.values(store.readStats.lists)].reduce((a, b) => a + b, 0);
const message = (sessionKey: string, id: string, at: number): InboxRecord => ({ id, sessionKey, channel: "api", chatId: sessionKey.slice(4), senderId: "u", content: `m ${id}`, media: [], at });

describe("the store's reads of what it wrote (src/store/known.ts)", () => {
  const tmp = useTempDirs();

  it("answers a session's meta it wrote (and deleted) without LevelDB, and the same as LevelDB would", async () => {
    const dir = join(await tmp(), "store");
    const store = await openStore(dir);
    try {
      // Never written: known absent (a new session's first turn reads it), no LevelDB read.
      expect(await getSessionMeta(store, "api:a")).toBeUndefined();
      expect(leveldbReads(store)).toBe(0);
      const { ops, meta } = appendMessagesOps(newSessionMeta("api:a", 1), [{ role: "user", content: "hi" }], "t1", 2);
      await store.batch(ops, { sync: true });
      const reads = leveldbReads(store);
      expect(await getSessionMeta(store, "api:a")).toEqual(meta);
      expect(leveldbReads(store)).toBe(reads);
      await store.batch([{ type: "del", sublevel: "sessions", key: "meta:api:a" }], { sync: false });
      expect(await getSessionMeta(store, "api:a")).toBeUndefined();
      expect(leveldbReads(store)).toBe(reads);
      expect(store.readStats.fromMemory).toBe(3);
    } finally {
      await store.close();
    }
  });

  it("checks a record against its schema only when it comes from LevelDB, not when it is what this process wrote", async () => {
    const dir = join(await tmp(), "store");
    let store = await openStore(dir);
    const metaSchema = z.object({ key: z.string(), n: z.number().int() });
    const checks = vi.spyOn(metaSchema, "safeParse");
    const inboxSchema = z.object({ id: z.string(), at: z.number() });
    const inboxChecks = vi.spyOn(inboxSchema, "safeParse");
    try {
      await store.batch([{ type: "put", sublevel: "sessions", key: "meta:api:a", value: { key: "api:a", n: 1 } }, ...inboxPutOps(message("api:a", "m1", 1))], { sync: true });
      // Answered from the record cache and the inbox mirror: parsed, not checked again.
      expect(await store.get("sessions", "meta:api:a", metaSchema)).toEqual({ key: "api:a", n: 1 });
      expect((await store.list("inbox", inboxSchema, { prefix: `api:a${KEY_END}` })).map((r) => r.value.id)).toEqual(["m1"]);
      expect(checks).not.toHaveBeenCalled();
      expect(inboxChecks).not.toHaveBeenCalled();
      // Each read hands out its own copy: a caller changing it changes nothing stored.
      (await store.get("sessions", "meta:api:a", metaSchema))!.n = 99;
      expect((await store.get("sessions", "meta:api:a", metaSchema))?.n).toBe(1);
      // A record another run left behind (here: one that no longer matches) is checked when read.
      await store.batch([{ type: "put", sublevel: "sessions", key: "meta:api:bad", value: { key: "api:bad", n: 1.5 } }], { sync: true });
      await store.close();
      store = await openStore(dir);
      expect(await store.get("sessions", "meta:api:a", metaSchema)).toEqual({ key: "api:a", n: 1 });
      expect((await store.list("inbox", inboxSchema, { prefix: `api:a${KEY_END}` })).map((r) => r.value.id)).toEqual(["m1"]);
      expect(checks).toHaveBeenCalledTimes(1);
      expect(inboxChecks).toHaveBeenCalledTimes(1);
      await expect(store.get("sessions", "meta:api:bad", metaSchema)).rejects.toBeInstanceOf(CorruptRecordError);
    } finally {
      await store.close();
    }
  });

  it("knows a session's meta is absent without LevelDB only when it never saw the key: those stored before it opened are read", async () => {
    const dir = join(await tmp(), "store");
    let store = await openStore(dir);
    const keys = Array.from({ length: 300 }, (_, i) => `api:s${i}`);
    try {
      for (const key of keys) await store.batch(appendMessagesOps(newSessionMeta(key, 1), [{ role: "user", content: "hi" }], "t1", 2).ops, { sync: false });
      await store.close();
      // A new process: the filter is built from the keys LevelDB holds; its record cache is empty.
      store = await openStore(dir);
      for (const key of keys) expect((await getSessionMeta(store, key))?.key).toBe(key);
      expect(leveldbReads(store)).toBe(keys.length);
      const before = leveldbReads(store);
      for (let i = 0; i < 300; i++) expect(await getSessionMeta(store, `api:new${i}`)).toBeUndefined();
      // Nearly all answered from memory (a false positive of the filter is read from LevelDB).
      expect(leveldbReads(store) - before).toBeLessThan(5);
    } finally {
      await store.close();
    }
  });

  it("an absence filter never calls a key it was given absent, and knows nothing before it is built", () => {
    const filter = createAbsenceFilter(["!sessions!meta:"], 1 << 16);
    expect(filter.absent("!sessions!meta:a")).toBe(false);
    filter.add(["!sessions!meta:a"]);
    filter.built();
    const seen = Array.from({ length: 2_000 }, (_, i) => `!sessions!meta:k${i}`);
    filter.writing(seen.map((key) => ({ type: "put" as const, key, value: "{}" })));
    for (const key of ["!sessions!meta:a", ...seen]) expect(filter.absent(key)).toBe(false);
    // Not covered: never said absent.
    expect(filter.absent("!turns!x")).toBe(false);
    // A deletion does not take a key out.
    filter.writing([{ type: "del", key: "!sessions!meta:gone" }]);
    expect(filter.absent("!sessions!meta:gone")).toBe(true);
  });

  it("lists a session's inbox and open turns from its mirror, kept by every write and rebuilt at open", async () => {
    const dir = join(await tmp(), "store");
    let store = await openStore(dir);
    try {
      await store.batch([...inboxPutOps(message("api:a", "api:2", 20)), ...inboxPutOps(message("api:a", "api:1", 10)), ...inboxPutOps(message("api:ab", "api:3", 5))], { sync: true });
      await store.batch([openTurnOp("t1", "api:a")], { sync: false });
      const before = leveldbReads(store);
      expect((await sessionInbox(store, "api:a")).map((m) => m.id)).toEqual(["api:1", "api:2"]);
      expect((await sessionInbox(store, "api:ab")).map((m) => m.id)).toEqual(["api:3"]);
      expect(await sessionInbox(store, "api:none")).toEqual([]);
      expect(await listOpenTurns(store, "api:a")).toEqual([{ turnId: "t1", sessionKey: "api:a" }]);
      expect(await listOpenTurns(store, "api:ab")).toEqual([]);
      expect(leveldbReads(store)).toBe(before);
      // Every session's listing is not one owner's range: LevelDB answers it.
      expect(await listOpenTurns(store)).toHaveLength(1);
      expect(leveldbReads(store)).toBe(before + 1);

      await store.batch([...inboxDeleteOps("api:a", ["api:1"]), closeTurnOp("t1", "api:a")], { sync: true });
      expect((await sessionInbox(store, "api:a")).map((m) => m.id)).toEqual(["api:2"]);
      expect(await listOpenTurns(store, "api:a")).toEqual([]);

      // A new process: the mirror is built from what LevelDB holds.
      await store.close();
      store = await openStore(dir);
      const reopened = leveldbReads(store);
      expect((await sessionInbox(store, "api:a")).map((m) => m.id)).toEqual(["api:2"]);
      expect((await sessionInbox(store, "api:ab")).map((m) => m.id)).toEqual(["api:3"]);
      expect(leveldbReads(store)).toBe(reopened);
    } finally {
      await store.close();
    }
  });

  it("lists mirrored keys in LevelDB's order (UTF-8 bytes), as an iterator does", async () => {
    const dir = join(await tmp(), "store");
    const store = await openStore(dir);
    // U+FF5E sorts before U+1F600 in UTF-8, after its UTF-16 surrogates.
    const ids = ["api:\u{1F600}", "api:\uFF5E", "api:b", "api:a"];
    const schema = z.unknown();
    try {
      await store.batch(ids.flatMap((id) => inboxPutOps(message("api:s", id, 1))), { sync: true });
      const fromMirror = (await store.list("inbox", schema, { prefix: "api:s\u0000" })).map((r) => r.key);
      expect(store.readStats.lists.inbox ?? 0).toBe(0);
      await store.close();
      const readOnly = await openStore(dir, { readOnly: true });
      try {
        const fromLevel = (await readOnly.list("inbox", schema, { prefix: "api:s\u0000" })).map((r) => r.key);
        expect(readOnly.readStats.lists.inbox).toBe(1);
        expect(fromMirror).toEqual(fromLevel);
      } finally {
        await readOnly.close();
      }
    } finally {
      await store.close().catch(() => undefined);
    }
  });

  it("coalesces concurrent unsynced batches; a batch with no JSON form fails alone", async () => {
    const store = await openStore(join(await tmp(), "store"));
    try {
      const writes = Array.from({ length: 20 }, (_, i) => store.batch([{ type: "put", sublevel: "journal", key: `k${i}`, value: { i } }]));
      const bad = expect(store.batch([{ type: "put", sublevel: "journal", key: "bad", value: undefined }])).rejects.toThrow(/no JSON form/);
      await Promise.all(writes);
      await bad;
      expect(store.unsyncedStats.requests).toBe(20);
      expect(store.unsyncedStats.writes).toBeLessThan(20);
      expect(await store.list("journal", z.object({ i: z.number() }))).toHaveLength(20);
    } finally {
      await store.close();
    }
  });
});

describe("an unsynced batch while a synced write is in flight", () => {
  const tmp = useTempDirs();
  it("rides with the synced group forming (no write of its own); with none forming it is written on its own", async () => {
    const store = await openStore(join(await tmp(), "store"));
    try {
      const first = store.batch([{ type: "put", sublevel: "journal", key: "a", value: 1 }], { sync: true });
      const rider = store.batch([{ type: "put", sublevel: "journal", key: "b", value: 2 }]);
      await Promise.all([first, rider]);
      // One write: the synced batch and its rider, taken together at the end of the loop's turn.
      expect(store.commitStats).toMatchObject({ requests: 1, writes: 1, joined: 1 });
      expect(store.unsyncedStats.requests).toBe(0);
      await store.batch([{ type: "put", sublevel: "journal", key: "c", value: 3 }]);
      expect(store.unsyncedStats.requests).toBe(1);
      expect((await store.list("journal", z.number())).map((r) => r.value)).toEqual([1, 2, 3]);
    } finally {
      await store.close();
    }
  });
});

describe("createRecordCache / createRangeMirror", () => {
  it("keeps the newest write of a key when an older write finishes after it; forgets everything when cleared", () => {
    const cache = createRecordCache(["!sessions!meta:"], 2);
    cache.written([{ type: "put", key: "!sessions!meta:a", value: "2" }], 2);
    cache.written([{ type: "put", key: "!sessions!meta:a", value: "1" }], 1);
    expect(cache.lookup("!sessions!meta:a")).toEqual({ text: "2", own: true });
    expect(cache.lookup("!sessions!msg:a")).toBe("unknown");
    cache.written([{ type: "put", key: "!sessions!meta:b", value: "b" }, { type: "del", key: "!sessions!meta:c" }], 3);
    // At most 2: the oldest went.
    expect(cache.lookup("!sessions!meta:a")).toBe("unknown");
    expect(cache.lookup("!sessions!meta:c")).toEqual({ text: undefined, own: true });
    cache.clear();
    expect(cache.lookup("!sessions!meta:b")).toBe("unknown");
  });

  it("keeps a read's answer only when no write of the key began, ended or failed during the read", () => {
    const cache = createRecordCache(["!meta!c:"], 10);
    const key = "!meta!c:a";
    // Nothing under way: kept (an absent record too).
    cache.read(key, cache.reading(key), undefined);
    // Read from LevelDB, not written here: a reader checks it against its schema.
    expect(cache.lookup(key)).toEqual({ text: undefined, own: false });
    cache.clear();
    // A write under way when the read begins: not kept.
    const w1 = [{ type: "put" as const, key, value: "1" }];
    cache.writing(w1);
    cache.read(key, cache.reading(key), "0");
    expect(cache.lookup(key)).toBe("unknown");
    cache.written(w1, 1);
    expect(cache.lookup(key)).toEqual({ text: "1", own: true });
    // A write that began and ended during the read: its value stays, the read's older answer is dropped.
    cache.clear();
    const ticket = cache.reading(key);
    const w2 = [{ type: "put" as const, key, value: "2" }];
    cache.writing(w2);
    cache.written(w2, 2);
    cache.read(key, ticket, "1");
    expect(cache.lookup(key)).toEqual({ text: "2", own: true });
    // A write that failed during the read (what reached the disk is unknown: the store clears): not kept.
    cache.clear();
    const late = cache.reading(key);
    cache.writing(w2);
    cache.written(w2, 3, false);
    cache.clear();
    cache.read(key, late, "1");
    expect(cache.lookup(key)).toBe("unknown");
    // A read's answer is older than any write that finishes after it.
    cache.read(key, cache.reading(key), "old");
    cache.written(w1, 4);
    expect(cache.lookup(key)).toEqual({ text: "1", own: true });
  });

  it("answers only one owner's exact range, and nothing once invalidated until built again", () => {
    const mirror = createRangeMirror(["!inbox!"]);
    expect(mirror.rows("!inbox!a\u0000", "!inbox!a\u0001")).toBeUndefined();
    mirror.build([["!inbox!a\u0000x", "1"]]);
    // Built from LevelDB: not this process's writes (the third element).
    expect(mirror.rows("!inbox!a\u0000", "!inbox!a\u0001")).toEqual([["!inbox!a\u0000x", "1", false]]);
    expect(mirror.rows("!inbox!a", "!inbox!b")).toBeUndefined();
    expect(mirror.rows("!inbox!a\u0000x", "!inbox!a\u0000y")).toBeUndefined();
    mirror.written([{ type: "del", key: "!inbox!a\u0000x" }, { type: "put", key: "!inbox!b\u0000y", value: "2" }]);
    expect(mirror.rows("!inbox!a\u0000", "!inbox!a\u0001")).toEqual([]);
    expect(mirror.rows("!inbox!b\u0000", "!inbox!b\u0001")).toEqual([["!inbox!b\u0000y", "2", true]]);
    expect(mirror.owners).toBe(1);
    mirror.invalidate();
    mirror.written([{ type: "put", key: "!inbox!a\u0000z", value: "3" }]);
    expect(mirror.rows("!inbox!a\u0000", "!inbox!a\u0001")).toBeUndefined();
  });
});
