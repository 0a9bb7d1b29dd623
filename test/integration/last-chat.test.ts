import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { Daemon } from "../../src/daemon-types.js";
import type { StoreOp } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { replyTo, sendApi, startDaemon } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";

const lastChat = z.object({ channel: z.string(), chatId: z.string() });

/** Every last-chat value the daemon hands to its store from now on, in order. */
function lastChatWrites(daemon: Daemon): unknown[] {
  const writes: unknown[] = [];
  const batch = daemon.store.batch.bind(daemon.store);
  daemon.store.batch = async (ops: StoreOp[], opts) => {
    for (const op of ops) if (op.type === "put" && op.sublevel === "meta" && op.key === "cron:lastChat") writes.push(op.value);
    return batch(ops, opts);
  };
  return writes;
}

describe("the heartbeat's last chat", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let daemon: Daemon | undefined;
  closeAfterEach(() => [daemon, fake]);

  it("is stored when it changes, not once per message: a burst writes it once and ends at the last chat", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "ok" }));
    daemon = await startDaemon(await tmp(), fake.url);
    const writes = lastChatWrites(daemon);
    // The same chat, many times: written once.
    const same = await Promise.all(Array.from({ length: 8 }, (_, i) => sendApi(daemon!, "one", `hello ${i}`)));
    await Promise.all(same.map((id) => replyTo(daemon!, id)));
    await until(async () => (await daemon!.store.get("meta", "cron:lastChat", lastChat))?.chatId === "one", 10_000, "the last chat stored");
    expect(writes).toEqual([{ channel: "api", chatId: "one" }]);
    // A burst from many chats: far fewer writes than messages, and the last one wins.
    for (let i = 0; i < 20; i++) await daemon.accept("api", { chatId: `c${i}`, senderId: "u", content: "hi" });
    await until(async () => (await daemon!.store.get("meta", "cron:lastChat", lastChat))?.chatId === "c19", 10_000, "the burst's last chat stored");
    // Written at most once a second: 20 messages in well under that many seconds make far fewer writes.
    expect(writes.length).toBeLessThan(1 + 10);
    expect(writes.at(-1)).toEqual({ channel: "api", chatId: "c19" });
    // A shutdown writes what is pending at once.
    await daemon.accept("api", { chatId: "final", senderId: "u", content: "bye" });
    await daemon.shutdown();
    daemon = undefined;
    expect(writes.at(-1)).toEqual({ channel: "api", chatId: "final" });
  });

  it("is handed to the store as soon as a new chat writes, so a kill -9 a moment later keeps it", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "ok" }));
    daemon = await startDaemon(await tmp(), fake.url);
    const writes = lastChatWrites(daemon);
    // accept() publishes the message before it resolves: the write is issued by then, not a second later.
    await daemon.accept("api", { chatId: "chat-42", senderId: "u", content: "hi" });
    expect(writes).toEqual([{ channel: "api", chatId: "chat-42" }]);
  });

  it("ends at the last chat even when a write is slow (A, B while B's write is in flight, then A again)", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "ok" }));
    const home = await tmp();
    daemon = await startDaemon(home, fake.url);
    await daemon.accept("api", { chatId: "A", senderId: "u", content: "hi" });
    await until(async () => (await daemon!.store.get("meta", "cron:lastChat", lastChat))?.chatId === "A", 10_000, "A stored");
    // From here, writes of the key take a while (a busy store).
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    let issued!: () => void;
    const bIssued = new Promise<void>((r) => (issued = r));
    const batch = daemon.store.batch.bind(daemon.store);
    daemon.store.batch = async (ops: StoreOp[], opts) => {
      if (ops.some((op) => op.type === "put" && op.key === "cron:lastChat")) {
        issued();
        await slow;
      }
      return batch(ops, opts);
    };
    await daemon.accept("api", { chatId: "B", senderId: "u", content: "hi" });
    await bIssued;
    await daemon.accept("api", { chatId: "A", senderId: "u", content: "again" });
    release();
    await daemon.shutdown();
    daemon = await startDaemon(home, fake.url);
    expect(await daemon.store.get("meta", "cron:lastChat", lastChat)).toEqual({ channel: "api", chatId: "A" });
  });
});
