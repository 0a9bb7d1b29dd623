import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createBus } from "../../src/bus/index.js";
import { createInbound } from "../../src/inbound.js";
import { silentLogger } from "../../src/log/logger.js";
import { sessionInbox } from "../../src/store/inbox.js";
import { openStore } from "../../src/store/store.js";
import { useTempDirs } from "../helpers/tmp.js";

describe("inbound", () => {
  const tempDir = useTempDirs();

  it("takes a message in once when the same id arrives twice at once (a poll still in flight beside its restart)", async () => {
    const store = await openStore(join(await tempDir(), "store"));
    const routed: string[] = [];
    const inbound = createInbound({ store, bus: createBus(), logger: silentLogger(), accepting: () => true, route: (_key, m) => routed.push(m.id) });
    const message = { chatId: "42", senderId: "alice", content: "hi", messageId: "42:7" };
    const ids = await Promise.all([inbound.acceptAll("telegram", [message]), inbound.acceptAll("telegram", [message, { ...message, messageId: "42:8", content: "more" }])]);
    expect(ids).toEqual([["telegram:42:7"], ["telegram:42:7", "telegram:42:8"]]);
    expect(routed.sort()).toEqual(["telegram:42:7", "telegram:42:8"]);
    expect((await sessionInbox(store, "telegram:42")).map((m) => m.id).sort()).toEqual(["telegram:42:7", "telegram:42:8"]);
    // Once stored, the same id again is a duplicate as before.
    await inbound.acceptAll("telegram", [message]);
    expect(routed).toHaveLength(2);
    await store.close();
  });

  it("takes the message in on a second arrival when the first one's write failed", async () => {
    const store = await openStore(join(await tempDir(), "store"));
    const routed: string[] = [];
    const batch = store.batch.bind(store);
    let failures = 1;
    store.batch = (ops, opts) => (failures-- > 0 ? Promise.reject(new Error("injected: the write failed")) : batch(ops, opts));
    const inbound = createInbound({ store, bus: createBus(), logger: silentLogger(), accepting: () => true, route: (_key, m) => routed.push(m.id) });
    const message = { chatId: "42", senderId: "alice", content: "hi", messageId: "42:7" };
    const [first, second] = await Promise.allSettled([inbound.acceptAll("telegram", [message]), inbound.acceptAll("telegram", [message])]);
    expect(first.status).toBe("rejected");
    expect(second).toEqual({ status: "fulfilled", value: ["telegram:42:7"] });
    expect(routed).toEqual(["telegram:42:7"]);
    expect((await sessionInbox(store, "telegram:42")).map((m) => m.id)).toEqual(["telegram:42:7"]);
    await store.close();
  });
});
