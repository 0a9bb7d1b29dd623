import { describe, expect, it } from "vitest";
import type { Daemon } from "../../src/daemon-types.js";
import { LAST_CHAT_KEY } from "../../src/cron/last-chat.js";
import type { Store } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { replyTo, sendApi as send, startDaemon } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { closeAfterEach } from "../helpers/teardown.js";

/**
 * Counts the store's LevelDB reads (by kind and sublevel), the reads it answered from what it wrote
 * (`from memory`), and its synced and unsynced batches while `run` runs (the reply's delivery aside).
 */
async function countStore<T>(store: Store, run: () => Promise<T>): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  const bump = (k: string, n = 1) => (counts[k] = (counts[k] ?? 0) + n);
  const before = structuredClone(store.readStats);
  const { batch } = store;
  store.batch = (ops, opts) => {
    // The channel's delivery of the reply runs after the reply is out, on its own clock: not the turn's;
    // nor is the heartbeat's last chat (src/cron/last-chat.ts), written when the chat changes, at most once a second.
    const delivery = ops.some((op) => op.type === "del" && op.sublevel === "outbox");
    const lastChat = ops.every((op) => op.sublevel === "meta" && op.key === LAST_CHAT_KEY);
    if (!delivery && !lastChat) bump(opts?.sync ? "synced batch" : "batch");
    return batch.call(store, ops, opts);
  };
  try {
    await run();
  } finally {
    Object.assign(store, { batch });
  }
  const after = store.readStats;
  for (const kind of ["gets", "lists"] as const) {
    for (const [sublevel, n] of Object.entries(after[kind])) {
      const d = n - (before[kind][sublevel as keyof typeof before.gets] ?? 0);
      if (d > 0) bump(`${kind === "gets" ? "get" : "list"} ${sublevel}`, d);
    }
  }
  if (after.fromMemory > before.fromMemory) bump("from memory", after.fromMemory - before.fromMemory);
  // The system prompt's stored chunks are looked up by their own cache (src/store/blobs.ts), not pinned here.
  delete counts["get blobs"];
  return counts;
}

/**
 * What one turn (a model call, one tool call, the answer) costs the store, pinned so it cannot
 * silently grow: the reads a turn makes and its synced batches.
 */
describe("a turn's store traffic", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let daemon: Daemon | undefined;
  closeAfterEach(() => [daemon, fake]);

  it("reads only what it did not write; a one-tool turn writes 4 synced batches (plus the inbox's)", async () => {
    fake = await startFakeOpenAi([], (req) => (req.body.messages.at(-1)?.role === "tool" ? { content: "listed" } : { toolCalls: [{ name: "list_dir", arguments: {} }] }));
    daemon = await startDaemon(await tmp(), fake.url);
    const d = daemon;
    const turn = (chat: string) => countStore(d.store, async () => expect((await replyTo(d, await send(d, chat, "list the workspace"))).content).toBe("listed"));

    // Start-up's own reads (recovery, upkeep) are over once a first turn is answered.
    await turn("warm-up");
    // A new session (no stored message or open turn at daemon start, first started here): its first
    // message comes with its start and its load reads nothing; the turn reads the session's meta to build the input, known
    // absent (a key the store never saw: known.ts's absence filter), and its final
    // batch finds the meta the first checkpoint wrote in the store's cache; the tool journal is not read.
    // Synced: the inbox, then awaiting_model, awaiting_tools (carrying tool.started), awaiting_model
    // (carrying tools_completed), responded. Unsynced: tool.completed (the next synced batch covers it).
    const first = await turn("cost");
    expect(first).toEqual({ "from memory": 2, "synced batch": 5, batch: 1 });

    // The same live session again: the messages appended since are read; its meta (twice) comes
    // from what the last turn wrote, and its consolidation state (never written) is known absent.
    const second = await turn("cost");
    expect(second).toEqual({ "from memory": 3, "list sessions": 1, "synced batch": 5, batch: 1 });

    // And again: the same.
    const third = await turn("cost");
    expect(third).toEqual({ "from memory": 3, "list sessions": 1, "synced batch": 5, batch: 1 });
  });
});
