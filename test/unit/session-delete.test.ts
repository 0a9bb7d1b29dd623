import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createApiChannel } from "../../src/channels/api.js";
import { inboxPutOps, sessionInbox } from "../../src/store/inbox.js";
import { KEY_END } from "../../src/session-key.js";
import { sessionDetail, sessionsOverview } from "../../src/store/session-view.js";
import { appendMessagesOps, deleteSessionOps, getSessionMeta, newEpochOps, newSessionMeta } from "../../src/store/sessions.js";
import { openStore, type Store, type SublevelName } from "../../src/store/store.js";
import { subagentPutOp, subagentSessionKey } from "../../src/store/subagents.js";
import { checkpointOps, listOpenTurns, openTurnOp, type TurnRecord } from "../../src/store/turns.js";
import { toolJournalOp } from "../../src/store/turn-journal.js";
import { useTempDirs } from "../helpers/tmp.js";

const any = z.unknown();
const keys = async (store: Store, sublevel: SublevelName) => (await store.list(sublevel, any)).map((r) => r.key);

function turn(turnId: string, sessionKey: string, final: boolean): TurnRecord {
  return {
    format: 2,
    turnId,
    sessionKey,
    state: final ? "responded" : "awaiting_model",
    final,
    seq: 1,
    snapshot: { status: final ? "done" : "active", value: final ? "responded" : "awaiting_model", context: { turnId, messages: [], iteration: 0, seq: 1, takenIds: [] } },
    input: { turnId, sessionKey, channel: "api", chatId: sessionKey, messages: [{ role: "user", content: "hi" }], maxIterations: 5 },
    createdAt: 1,
    updatedAt: 2,
    resumes: 0,
  };
}

/** A session with two epochs, a finished and an interrupted turn (journal, open index), an unanswered message, an API reply and a subagent with its own transcript. */
async function seed(store: Store, key: string, now: number) {
  let meta = newSessionMeta(key, now);
  const first = appendMessagesOps(meta, [{ role: "user", content: `old ${key}` }, { role: "assistant", content: "old answer" }], "t-old", now, undefined, true);
  meta = first.meta;
  const epoch = newEpochOps(meta, now + 1);
  meta = epoch.meta;
  const second = appendMessagesOps(meta, [{ role: "user", content: `new ${key}` }, { role: "assistant", content: "new answer" }], `${key}-t1`, now + 2, undefined, true);
  const done = turn(`${key}-t1`, key, true);
  const open = turn(`${key}-t2`, key, false);
  const subId = `sa-${key.length}-x`; // distinct, and neither id a prefix of the other
  const sub = appendMessagesOps(newSessionMeta(subagentSessionKey(subId), now), [{ role: "user", content: "sub task" }], `${subId}-t`, now);
  await store.batch(
    [
      ...first.ops,
      ...epoch.ops,
      ...second.ops,
      ...checkpointOps(done, 0, { withInput: true }),
      ...checkpointOps(open, 0, { withInput: true }),
      openTurnOp(open.turnId, key),
      toolJournalOp({ kind: "tool", turnId: open.turnId, callId: "c1", iteration: 0, index: 0, name: "exec", args: {}, status: "started", at: now }),
      ...inboxPutOps({ id: `api:${key}-m`, sessionKey: key, channel: "api", chatId: key, senderId: "u", content: "unanswered", media: [], at: now }),
      subagentPutOp({
        id: subId,
        label: "research",
        task: "look it up",
        origin: { sessionKey: key, channel: "api", chatId: key, turnId: done.turnId },
        wait: false,
        status: "responded",
        turnId: `${subId}-t`,
        result: "found",
        createdAt: now,
        finishedAt: now + 1,
      }),
      ...sub.ops,
      ...checkpointOps(turn(`${subId}-t`, subagentSessionKey(subId), true), 0, { withInput: true }),
    ],
    { sync: true },
  );
  await createApiChannel(store).send({ deliveryId: `d-${key}`, chatId: key, content: "new answer", media: [], answers: [], createdAt: now } as never, async () => {});
  return { subId };
}

describe("deleting a session", () => {
  const tempDir = useTempDirs();

  it("removes every epoch's messages, meta, turns with their journal and open index, inbox, API replies and subagents, and nothing of a session whose key it prefixes", async () => {
    const store = await openStore(join(await tempDir(), "store"));
    const { subId } = await seed(store, "api:a", 1_000);
    await seed(store, "api:ab", 2_000);
    const before = { sessions: await keys(store, "sessions"), turns: await keys(store, "turns"), journal: await keys(store, "journal"), meta: await keys(store, "meta"), inbox: await keys(store, "inbox"), subagents: await keys(store, "subagents") };

    const deletion = await deleteSessionOps(store, "api:a");
    expect(deletion?.counts).toEqual({ messages: 4, turns: 2, interrupted: 1, inbox: 1, subagents: 1 });
    await store.batch(deletion!.ops, { sync: true });

    expect(await getSessionMeta(store, "api:a")).toBeUndefined();
    expect(await sessionDetail(store, "api:a")).toBeUndefined();
    expect(await sessionDetail(store, subagentSessionKey(subId))).toBeUndefined();
    expect(await sessionInbox(store, "api:a")).toEqual([]);
    expect(await listOpenTurns(store, "api:a")).toEqual([]);
    const left = (s: string[]) => s.filter((k) => k.includes("api:a") && !k.includes("api:ab"));
    expect(left(await keys(store, "sessions"))).toEqual([]);
    expect((await keys(store, "sessions")).filter((k) => k.includes(subId))).toEqual([]);
    // (A message id's `seen` mark stays: it holds no content and keeps a redelivered message from being answered twice.)
    expect(left(await keys(store, "meta")).filter((k) => !k.startsWith("seen:"))).toEqual([]);
    expect(left(await keys(store, "inbox"))).toEqual([]);
    expect((await keys(store, "turns")).filter((k) => k.startsWith("api:a-") || k.startsWith(subId))).toEqual([]);
    expect((await keys(store, "journal")).filter((k) => k.startsWith("api:a-") || k.startsWith(subId))).toEqual([]);
    expect(await keys(store, "subagents")).toEqual(before.subagents.filter((k) => k !== subId));

    // The other session, whose key starts with the deleted one's, is whole.
    const other = await sessionDetail(store, "api:ab");
    expect(other?.messages.map((m) => m.content)).toEqual(["new api:ab", "new answer"]);
    expect(other?.turns).toHaveLength(2);
    expect(await sessionInbox(store, "api:ab")).toHaveLength(1);
    for (const [name, list] of Object.entries(before)) {
      const now = await keys(store, name as SublevelName);
      expect(now.filter((k) => k.includes("api:ab") || k.includes("sa-6-x")).length, name).toBe(list.filter((k) => k.includes("api:ab") || k.includes("sa-6-x")).length);
    }
    await store.close();
  });

  it("removes the session's records that no longer read, and is not stopped by another session's corrupt record", async () => {
    const store = await openStore(join(await tempDir(), "store"));
    await seed(store, "api:a", 1_000);
    await seed(store, "api:ab", 2_000);
    const bad = { bogus: true };
    const mine = (k: string) => k === "meta:api:a" || k.includes(`api:a${KEY_END}`);
    const message = (await keys(store, "sessions")).find((k) => k.startsWith(`msg:api:a${KEY_END}`))!;
    const inbox = (await keys(store, "inbox")).find(mine)!;
    await store.batch(
      [
        { type: "put", sublevel: "sessions", key: "meta:api:a", value: bad },
        { type: "put", sublevel: "sessions", key: message, value: bad },
        { type: "put", sublevel: "inbox", key: inbox, value: bad },
        { type: "put", sublevel: "turns", key: "api:ab-t1", value: bad },
      ],
      { sync: true },
    );

    const deletion = await deleteSessionOps(store, "api:a");
    expect(deletion?.counts).toEqual({ messages: 4, turns: 2, interrupted: 1, inbox: 1, subagents: 1 });
    await store.batch(deletion!.ops, { sync: true });
    expect((await keys(store, "sessions")).filter(mine)).toEqual([]);
    expect((await keys(store, "inbox")).filter(mine)).toEqual([]);
    expect((await keys(store, "meta")).filter(mine)).toEqual([]);
    // The other session's corrupt turn is not this one's to delete.
    expect(await keys(store, "turns")).toContain("api:ab-t1");
    expect((await sessionsOverview(store)).corrupt).toEqual([expect.objectContaining({ sublevel: "turns", key: "api:ab-t1" })]);
    await store.close();
  });

  it("finds nothing to delete for an unknown session", async () => {
    const store = await openStore(join(await tempDir(), "store"));
    await seed(store, "api:a", 1_000);
    expect(await deleteSessionOps(store, "api:nobody")).toBeUndefined();
    await store.close();
  });

  it("shows old epochs (before /new) when asked for all of them", async () => {
    const store = await openStore(join(await tempDir(), "store"));
    await seed(store, "api:a", 1_000);
    const current = await sessionDetail(store, "api:a");
    expect(current?.messages.map((m) => m.content)).toEqual(["new api:a", "new answer"]);
    const all = await sessionDetail(store, "api:a", { allEpochs: true });
    expect(all?.messages.map((m) => [m.epoch, m.content])).toEqual([
      [0, "old api:a"],
      [0, "old answer"],
      [1, "new api:a"],
      [1, "new answer"],
    ]);
    await store.close();
  });
});
