import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createActor, fromCallback, type AnyActorRef } from "xstate";
import { createFreshSessions, createLoadSession } from "../../actors/load-session.js";
import type { SessionEvent } from "../../machines/session.machine.js";
import { inboxPutOps } from "../../src/store/inbox.js";
import { sessionsToRecover } from "../../src/store/recovery.js";
import { openStore, type Store } from "../../src/store/store.js";
import { openTurnOp } from "../../src/store/turns.js";
import { useTempDirs } from "../helpers/tmp.js";

const row = (sessionKey: string, id: string, channel = "api") => inboxPutOps({ id, sessionKey, channel, chatId: "1", senderId: "u", content: id, media: [], at: 1 });

/** Runs the `load` action for `sessionKey` and returns the event it sends the session. */
async function load(store: Store, fresh: ReturnType<typeof createFreshSessions>, sessionKey: string): Promise<SessionEvent> {
  return new Promise((resolve) => {
    const self = createActor(fromCallback<SessionEvent>(({ receive }) => receive(resolve))).start() as AnyActorRef;
    createLoadSession(store, fresh)({ self }, { sessionKey });
  });
}

describe("a new session's load (fresh sessions)", () => {
  const tempDir = useTempDirs();

  it("skips the read only for a key first started here with nothing stored when the daemon started", () => {
    const fresh = createFreshSessions();
    // Before the daemon has listed what it started with, every start reads (and counts as a start).
    expect(fresh.claim("early")).toBe(false);
    fresh.known(["api:stored"]);
    expect(fresh.claim("early")).toBe(false);
    expect(fresh.claim("api:stored")).toBe(false);
    expect(fresh.claim("subagent:abc")).toBe(false);
    expect(fresh.claim("api:new")).toBe(true);
    // Its next start (after a passivation or a crash) reads what the store kept.
    expect(fresh.claim("api:new")).toBe(false);
    fresh.distrust();
    expect(fresh.claim("api:other")).toBe(false);
    fresh.known([]);
    expect(fresh.claim("api:third")).toBe(false);
  });

  it("what the daemon started with: every key with an inbox row (on any channel) or an open turn", async () => {
    const store = await openStore(join(await tempDir(), "store"));
    await store.batch([...row("api:a", "m1"), ...row("telegram:b", "m2", "telegram"), openTurnOp("t1", "api:c")], { sync: true });
    const found = await sessionsToRecover(store, (channel) => channel === "api");
    expect(found.stored.sort()).toEqual(["api:a", "api:c", "telegram:b"]);
    expect(found.wake.sort()).toEqual(["api:a", "api:c"]);
    await store.close();
  });

  it("a fresh session is loaded without reading the store; any other reads its inbox", async () => {
    const store = await openStore(join(await tempDir(), "store"));
    await store.batch([...row("api:old", "m1")], { sync: true });
    const fresh = createFreshSessions();
    fresh.known((await sessionsToRecover(store, () => true)).stored);
    const old = await load(store, fresh, "api:old");
    expect(old).toMatchObject({ type: "session.loaded", loaded: { queue: [{ id: "m1" }], resumeTurnId: null } });
    // A row written after the listing (by this process, which hands the message to the session itself) is not read back…
    await store.batch([...row("api:new", "m2")], { sync: true });
    await store.close();
    // …and the store is not touched at all: closed, a read would fail the load.
    expect(await load(store, fresh, "api:new")).toEqual({ type: "session.loaded", loaded: { queue: [], resumeTurnId: null } });
    expect(await load(store, fresh, "api:new")).toMatchObject({ type: "session.loadFailed" });
  });
});
