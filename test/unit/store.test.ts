import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Level } from "level";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { CorruptRecordError, StoreLockedError } from "../../src/errors.js";
import { apiReplies, createApiChannel } from "../../src/channels/api.js";
import { DeliveryRejectedError } from "../../src/channels/channel.js";
import { prefixEnd } from "../../src/store/encoding.js";
import { createGroupCommit } from "../../src/store/group-commit.js";
import { inboxPutOps, sessionInbox, sessionsWithInbox, wasSeen } from "../../src/store/inbox.js";
import { pruneMarkers } from "../../src/store/markers.js";
import { outboxDeliveredOps, wasDelivered } from "../../src/store/outbox.js";
import { sessionDetail, sessionsOverview } from "../../src/store/session-view.js";
import { appendMessagesOps, listSessions, newSessionMeta, sessionMessages } from "../../src/store/sessions.js";
import { openStore, type CorruptRecord, type Store } from "../../src/store/store.js";
import { listOpenTurns, openTurnOp, TURN_FORMAT } from "../../src/store/turns.js";
import { turnSummaryOps } from "../../src/store/turn-summaries.js";
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

  it("a listing can skip corrupt records (schema or JSON) and report them instead of failing", async () => {
    const path = join(await tempDir(), "store");
    const first = await openStore(path);
    await first.batch([
      { type: "put", sublevel: "cron", key: "a", value: { n: 1 } },
      { type: "put", sublevel: "cron", key: "b", value: { n: 2.5, extra: true } },
      { type: "put", sublevel: "cron", key: "c", value: { n: "three" } },
      { type: "put", sublevel: "cron", key: "e", value: { n: 5 } },
    ]);
    await first.close();
    // A value that is not even JSON, as a torn or foreign write could leave.
    const raw = new Level<string, string>(path);
    await raw.sublevel<string, string>("cron", { valueEncoding: "utf8" }).put("d", "{not json");
    await raw.close();

    const store = await openStore(path);
    await expect(store.list("cron", rec)).rejects.toThrow(/^record cron\/c does not match its schema: n: .*expected number/);
    await expect(store.get("cron", "d", rec)).rejects.toBeInstanceOf(CorruptRecordError);
    const corrupt: CorruptRecord[] = [];
    const rows = await store.list("cron", rec, { onCorrupt: (c) => corrupt.push(c) });
    expect(rows.map((r) => [r.key, r.value.n])).toEqual([["a", 1], ["b", 2.5], ["e", 5]]);
    expect(corrupt.map((c) => [c.sublevel, c.key])).toEqual([["cron", "c"], ["cron", "d"]]);
    expect(corrupt[1]?.problem).toBe("not valid JSON");
    await store.close();
  });

  it("reads what abstract-level's sublevels wrote, and writes what they read (keys and values encoded by hand on the root)", async () => {
    const path = join(await tempDir(), "store");
    // A store as troupe wrote it through sublevel objects with the json encoding.
    const old = new Level<string, unknown>(path, { valueEncoding: "json" });
    const sub = (name: string) => old.sublevel<string, unknown>(name, { valueEncoding: "json" });
    await old.batch([
      { type: "put", sublevel: sub("sessions"), key: "meta:api:a", value: { n: 1 } },
      { type: "put", sublevel: sub("sessions"), key: "meta:api:b", value: { n: 2 } },
      { type: "put", sublevel: sub("meta"), key: "ü→é", value: { n: 3 } },
      { type: "put", sublevel: sub("turns"), key: "t", value: { n: 4 } },
    ]);
    await old.close();

    const store = await openStore(path);
    expect(await store.get("sessions", "meta:api:a", rec)).toEqual({ n: 1 });
    expect(await store.get("meta", "ü→é", rec)).toEqual({ n: 3 });
    expect((await store.list("sessions", rec)).map((r) => [r.key, r.value.n])).toEqual([["meta:api:a", 1], ["meta:api:b", 2]]);
    expect((await store.list("sessions", rec, { prefix: "meta:api:b" })).map((r) => r.key)).toEqual(["meta:api:b"]);
    // A sublevel's listing holds nothing of its neighbours (turns after sessions, meta before).
    expect((await store.list("turns", rec)).map((r) => r.key)).toEqual(["t"]);
    await store.batch([{ type: "put", sublevel: "sessions", key: "meta:api:c", value: { n: 5 } }, { type: "del", sublevel: "sessions", key: "meta:api:a" }], { sync: true });
    await store.close();

    const back = new Level<string, unknown>(path, { valueEncoding: "json" });
    const sessions = back.sublevel<string, unknown>("sessions", { valueEncoding: "json" });
    expect(await sessions.keys().all()).toEqual(["meta:api:b", "meta:api:c"]);
    expect(await sessions.get("meta:api:c")).toEqual({ n: 5 });
    await back.close();
  });

  it("one corrupt session record leaves the session overview and detail standing, and names it", async () => {
    const store = await openStore(join(await tempDir(), "store"));
    const good = appendMessagesOps(newSessionMeta("api:good", 1), [{ role: "user", content: "hi" }, { role: "assistant", content: "hello" }], "t1", 2, { promptTokens: 3, completionTokens: 4, totalTokens: 7 }, true);
    // What a fractional token count from a model used to leave behind.
    const bad = { ...newSessionMeta("api:bad", 1), usage: { promptTokens: 1.5, completionTokens: 0, totalTokens: 1.5 } };
    await store.batch([
      ...good.ops,
      { type: "put", sublevel: "sessions", key: "meta:api:bad", value: bad },
      { type: "put", sublevel: "sessions", key: `msg:api:good\x00000000:000000005`, value: { message: { role: "tool", tool_call_id: 42, content: "x" }, turnId: "t1", at: 3 } },
      { type: "put", sublevel: "turns", key: "t-bad", value: { turnId: "t-bad" } },
    ]);
    const overview = await sessionsOverview(store);
    expect(overview.sessions.map((s) => [s.key, s.usage.totalTokens, s.turns])).toEqual([["api:good", 7, 1]]);
    expect(overview.corrupt.map((c) => `${c.sublevel}/${c.key}`).sort()).toEqual(["sessions/meta:api:bad", "turns/t-bad"]);
    expect(overview.corrupt.find((c) => c.key === "meta:api:bad")?.problem).toMatch(/^usage\.promptTokens: .*int/);

    const detail = await sessionDetail(store, "api:good");
    expect(detail?.messages.map((m) => m.content)).toEqual(["hi", "hello"]);
    expect(detail?.corrupt.map((c) => `${c.sublevel}/${c.key}`)).toEqual(["sessions/msg:api:good\x00000000:000000005", "turns/t-bad"]);
    await store.close();
  });

  it("sessions overview reads each session's turn summary, not its turn records", async () => {
    const store = await openStore(join(await tempDir(), "store"));
    const meta = { ...newSessionMeta("api:a", 1), turns: 3 };
    const turn = (turnId: string, state: string, createdAt: number, resumes = 0) => ({ sessionKey: "api:a", turnId, state, createdAt, resumes });
    await store.batch([
      { type: "put", sublevel: "sessions", key: "meta:api:a", value: meta },
      // Turn records that would not parse: a listing that read them would report them.
      { type: "put", sublevel: "turns", key: "t1", value: { turnId: "t1" } },
      { type: "put", sublevel: "turns", key: "t2", value: { turnId: "t2" } },
      ...turnSummaryOps(turn("t1", "awaiting_model", 1, 1)),
      ...turnSummaryOps(turn("t1", "responded", 1, 1)),
      ...turnSummaryOps(turn("t2", "failed", 2)),
    ]);
    const overview = await sessionsOverview(store);
    expect(overview.corrupt).toEqual([]);
    expect(overview.sessions.map((s) => [s.key, s.lastTurnState, s.resumed])).toEqual([["api:a", "failed", 1]]);
    await store.close();
  });

  it("a turn's summary is written with its first and final checkpoints only; while it is open, the overview takes its state from its record", async () => {
    const store = await openStore(join(await tempDir(), "store"));
    const meta = { ...newSessionMeta("api:a", 1), turns: 1 };
    const at = (state: string, final = false) => ({ sessionKey: "api:a", turnId: "t1", state, createdAt: 1, resumes: 0, final });
    // A middle checkpoint writes no summary; a final one does, first or not.
    expect(turnSummaryOps(at("awaiting_tools"), { first: false })).toEqual([]);
    expect(turnSummaryOps(at("responded", true), { first: false }).map((op) => op.key)).toEqual(["lastturn:api:a"]);
    const record = (state: string, seq: number) => ({
      format: TURN_FORMAT, turnId: "t1", sessionKey: "api:a", state, final: false, seq, createdAt: 1, updatedAt: 2, resumes: 0, messageCount: 2,
      snapshot: { status: "active", value: state, context: { turnId: "t1", messages: [], iteration: 1, seq, takenIds: [] } },
    });
    await store.batch([
      { type: "put", sublevel: "sessions", key: "meta:api:a", value: meta },
      openTurnOp("t1", "api:a"),
      { type: "put", sublevel: "turns", key: "t1", value: record("awaiting_model", 1) },
      ...turnSummaryOps(at("awaiting_model"), { first: true }),
    ]);
    // Stopped at a later checkpoint (troupe was killed there): the summary still says the first state.
    await store.batch([{ type: "put", sublevel: "turns", key: "t1", value: record("awaiting_tools", 2) }, ...turnSummaryOps(at("awaiting_tools"), { first: false })]);
    const overview = await sessionsOverview(store);
    expect(overview.sessions.map((s) => [s.key, s.lastTurnState, s.interrupted])).toEqual([["api:a", "awaiting_tools", 1]]);
    await store.close();
  });

  it("prunes seen and sent markers past their retention window, and nothing else", async () => {
    const store = await openStore(join(await tempDir(), "store"));
    const day = 24 * 3600_000;
    const msg = (id: string, at: number) => ({ id, sessionKey: "api:a", channel: "api", chatId: "api:a", senderId: "u", content: "x", media: [], at });
    await store.batch([
      ...inboxPutOps(msg("old", 0)),
      ...inboxPutOps(msg("new", 9 * day)),
      ...outboxDeliveredOps("d-old", 0),
      ...outboxDeliveredOps("d-new", 9 * day),
      openTurnOp("t1", "api:a"),
    ]);
    expect(await pruneMarkers(store, 10 * day, 7 * day)).toBe(2);
    expect([await wasSeen(store, "old"), await wasSeen(store, "new")]).toEqual([false, true]);
    expect([await wasDelivered(store, "d-old"), await wasDelivered(store, "d-new")]).toEqual([false, true]);
    // The inbox entries themselves and other meta records stay.
    expect((await sessionInbox(store, "api:a")).map((m) => m.id)).toEqual(["old", "new"]);
    expect((await listOpenTurns(store)).map((t) => t.turnId)).toEqual(["t1"]);
    expect(await pruneMarkers(store, 10 * day, 7 * day)).toBe(0);
    await store.close();
  });

  it("writes puts and deletes of one batch together, many batches in flight at once, and a close waits for them", async () => {
    const path = join(await tempDir(), "store");
    const a = await openStore(path);
    await a.batch([{ type: "put", sublevel: "cron", key: "gone", value: { n: 0 } }], { sync: true });
    const writes = Array.from({ length: 60 }, (_, i) =>
      a.batch(
        [
          { type: "put", sublevel: "cron", key: `k${String(i).padStart(2, "0")}`, value: { n: i, text: "é".repeat(i) } },
          ...(i === 30 ? [{ type: "del" as const, sublevel: "cron" as const, key: "gone" }] : []),
        ],
        { sync: i % 2 === 0 },
      ),
    );
    // Closed while they are in flight (not awaited first): the close waits for every one.
    await a.close();
    await Promise.all(writes);
    const b = await openStore(path);
    const rows = await b.list("cron", z.object({ n: z.number(), text: z.string() }));
    expect(rows.map((r) => r.value.n)).toEqual(Array.from({ length: 60 }, (_, i) => i));
    expect(rows[59]?.value.text).toBe("é".repeat(59));
    expect(await b.get("cron", "gone", rec)).toBeUndefined();
    await b.close();
  });

  it("prefixEnd is the least key above every key under the prefix, in LevelDB's order (code points)", () => {
    // By code points, as LevelDB orders UTF-8 bytes: the prefix with its last code point raised by one.
    const reference = (prefix: string) => {
      const chars = [...prefix];
      while (chars.length > 0) {
        const c = chars.pop()!.codePointAt(0)!;
        if (c < 0x10ffff) return chars.join("") + String.fromCodePoint(c + 1 >= 0xd800 && c + 1 <= 0xdfff ? 0xe000 : c + 1);
      }
      return undefined;
    };
    const cases = ["", "a", "meta:", "api:x\x00", "open:api:a\x00", "\ud7fe", "x\ud7ff", "x\uffff", "x\u{1F600}", "x\u{10FFFF}", "\u{10FFFF}", "é"];
    for (const prefix of cases) expect([prefix, prefixEnd(prefix)]).toEqual([prefix, reference(prefix)]);
    expect(prefixEnd("api:x\x00")).toBe("api:x\x01");
    expect(prefixEnd("x\ud7ff")).toBe("x\ue000");
    expect(prefixEnd("x\u{1F600}")).toBe("x\u{1F601}");
    expect(prefixEnd("\u{10FFFF}")).toBeUndefined();
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
    await gc.commit([1]);
    const results = await Promise.allSettled([gc.commit([13]), gc.commit([2])]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    await gc.commit([3]);
    expect(calls).toBe(3);
  });

  it("group commit writes the requests made in one turn of the event loop together, the first one included", async () => {
    const writes: number[][] = [];
    const gc = createGroupCommit<number>(async (ops) => void writes.push(ops));
    // Made one after the other in the same turn: written at once, the first would have gone alone (two fsyncs).
    await Promise.all([gc.commit([1]), gc.commit([2]), gc.commit([3])]);
    expect(writes).toEqual([[1, 2, 3]]);
    expect(gc.stats).toMatchObject({ requests: 3, writes: 1, largestGroup: 3 });
    // Requests that arrive while a write is in flight still wait for it and then go out together.
    let release!: () => void;
    const slow = createGroupCommit<number>(async (ops) => {
      writes.push(ops);
      if (ops.includes(4)) await new Promise<void>((resolve) => (release = resolve));
    });
    writes.length = 0;
    const first = slow.commit([4]);
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    const later = [slow.commit([5]), slow.commit([6])];
    release();
    await Promise.all([first, ...later]);
    expect(writes).toEqual([[4], [5, 6]]);
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

  describe("a session's records are listed by its key alone", () => {
    /** Every record a session keeps under its key: messages, an unanswered message, an open turn, an API reply. */
    async function fill(store: Store, key: string) {
      const { ops } = appendMessagesOps(newSessionMeta(key, 1), [{ role: "user", content: `hello from ${key}` }], null, 1);
      await store.batch([...ops, ...inboxPutOps({ id: `id-${key}`, sessionKey: key, channel: "api", chatId: key, senderId: "u", content: `queued for ${key}`, media: [], at: 1 }), openTurnOp(`turn-${key}`, key)]);
      await createApiChannel(store).send({ deliveryId: `d-${key}`, channel: "api", chatId: key, content: `reply to ${key}`, media: [], answers: [], createdAt: 1, attempts: 0 }, async () => undefined);
    }
    async function records(store: Store, key: string) {
      const meta = (await listSessions(store)).find((m) => m.key === key)!;
      return {
        messages: (await sessionMessages(store, meta)).map((m) => m.message.content),
        inbox: (await sessionInbox(store, key)).map((r) => r.content),
        open: (await listOpenTurns(store, key)).map((t) => t.turnId),
        replies: (await apiReplies(store, key)).map((r) => r.content),
      };
    }
    const own = (key: string) => ({ messages: [`hello from ${key}`], inbox: [`queued for ${key}`], open: [`turn-${key}`], replies: [`reply to ${key}`] });

    it("api:a does not list api:ab's or api:a:b's, nor they its", async () => {
      const store = await openStore(join(await tempDir(), "store"));
      const keys = ["api:a", "api:ab", "api:a:b", "api:a 0", "api:"];
      for (const key of keys) await fill(store, key);
      for (const key of keys) expect(await records(store, key), key).toEqual(own(key));
      await store.close();
    });

    it("the API channel files no reply under a chat id that is not a session key", async () => {
      const store = await openStore(join(await tempDir(), "store"));
      await fill(store, "api:victim");
      const send = createApiChannel(store).send({ deliveryId: "d-evil", channel: "api", chatId: "api:victim\u0000x", content: "INJECTED", media: [], answers: [], createdAt: 2, attempts: 0 }, async () => undefined);
      await expect(send).rejects.toThrow(DeliveryRejectedError);
      await expect(send).rejects.toThrow(/control character \(U\+0000\)/);
      expect(await records(store, "api:victim")).toEqual(own("api:victim"));
      await store.close();
    });

    it("lists every session, whatever characters its key has", async () => {
      const store = await openStore(join(await tempDir(), "store"));
      // Keys whose first character sorts above U+00FF (as UTF-8 bytes) after the listing's prefix.
      const keys = ["api:x", "日本:x", "ā", "🎉:x", "\uffee"];
      for (const key of keys) await fill(store, key);
      expect((await listSessions(store)).map((m) => m.key).sort()).toEqual([...keys].sort());
      expect((await listOpenTurns(store)).map((t) => t.sessionKey).sort()).toEqual([...keys].sort());
      expect((await sessionsWithInbox(store)).sort()).toEqual([...keys].sort());
      for (const key of keys) expect(await records(store, key), key).toEqual(own(key));
      await store.close();
    });

    it("lists by any prefix, exactly", async () => {
      const store = await openStore(join(await tempDir(), "store"));
      const keys = ["p\u00fe", "p\u00ff", "p\u0100", "p\uffff", "p\u{10ffff}", "q", "p"];
      await store.batch(keys.map((key, n) => ({ type: "put" as const, sublevel: "meta" as const, key, value: { n } })));
      expect((await store.list("meta", rec, { prefix: "p" })).map((r) => r.key)).toEqual(["p", "p\u00fe", "p\u00ff", "p\u0100", "p\uffff", "p\u{10ffff}"]);
      expect((await store.list("meta", rec, { prefix: "p\u00ff" })).map((r) => r.key)).toEqual(["p\u00ff"]);
      await store.close();
    });
  });
});
