import { describe, expect, it } from "vitest";
import type { Daemon } from "../../src/runtime.js";
import type { Store } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { replyTo, sendApi as send, startDaemon } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { closeAfterEach } from "../helpers/teardown.js";

/** Counts the store's reads (by kind and sublevel) and its synced and unsynced batches while `run` runs (the reply's delivery aside). */
async function countStore<T>(store: Store, run: () => Promise<T>): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  const bump = (k: string) => (counts[k] = (counts[k] ?? 0) + 1);
  const { get, list, batch } = store;
  store.get = ((sublevel, key, schema) => (bump(`get ${sublevel}`), get.call(store, sublevel, key, schema))) as Store["get"];
  store.list = ((sublevel, schema, opts) => (bump(`list ${sublevel}`), list.call(store, sublevel, schema, opts))) as Store["list"];
  store.batch = (ops, opts) => {
    // The channel's delivery of the reply runs after the reply is out, on its own clock: not the turn's.
    const delivery = ops.some((op) => op.type === "del" && op.sublevel === "outbox");
    if (!delivery) bump(opts?.sync ? "synced batch" : "batch");
    return batch.call(store, ops, opts);
  };
  try {
    await run();
  } finally {
    Object.assign(store, { get, list, batch });
  }
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

  it("reads the session once per turn; a one-tool turn writes 4 synced batches (plus the inbox's)", async () => {
    fake = await startFakeOpenAi([], (req) => (req.body.messages.at(-1)?.role === "tool" ? { content: "listed" } : { toolCalls: [{ name: "list_dir", arguments: {} }] }));
    daemon = await startDaemon(await tmp(), fake.url);
    const d = daemon;
    const turn = (chat: string) => countStore(d.store, async () => expect((await replyTo(d, await send(d, chat, "list the workspace"))).content).toBe("listed"));

    // Start-up's own reads (recovery, upkeep) are over once a first turn is answered.
    await turn("warm-up");
    // A new session: its start reads its open turns and inbox; the turn reads the session's meta
    // (absent) to build the input and again for its final batch; the tool journal is not read.
    // Synced: the inbox, then awaiting_model, awaiting_tools (carrying tool.started), awaiting_model
    // (carrying tools_completed), responded. Unsynced: tool.completed (the next synced batch covers it).
    const first = await turn("cost");
    expect(first).toEqual({ "list meta": 1, "list inbox": 1, "get sessions": 2, "synced batch": 5, batch: 1 });

    // The same live session again: its messages and consolidation state once, its meta twice.
    const second = await turn("cost");
    expect(second).toEqual({ "get sessions": 2, "list sessions": 1, "get meta": 1, "synced batch": 5, batch: 1 });
  });
});
