import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { turnDetail } from "../../src/server/turn-view.js";
import { openStore } from "../../src/store/store.js";
import { useTempDirs } from "../helpers/tmp.js";

const tempDir = useTempDirs();

describe("turn view (GET /api/turns/:id)", () => {
  it("answers for a running turn whose input and messages went between its reads (the final batch pruned them): it reads no messages", async () => {
    const store = await openStore(join(await tempDir(), "store"));
    const turnId = "t1";
    // A format-3 checkpoint naming 3 messages, read just before the turn's final batch pruned its input and messages.
    const record = {
      format: 3,
      turnId,
      sessionKey: "api:web",
      state: "awaiting_model",
      final: false,
      seq: 2,
      snapshot: { status: "active", value: "awaiting_model", context: { turnId, messages: [], iteration: 1, seq: 2, takenIds: [], usage: { totalTokens: 42 } } },
      createdAt: 1,
      updatedAt: 2,
      resumes: 0,
      messageCount: 3,
    };
    // Its input was still there when read; its messages were not when listed a moment later.
    const input = { turnId, sessionKey: "api:web", channel: "api", chatId: "web", messages: [{ role: "user", content: "hi" }], maxIterations: 10 };
    await store.batch(
      [
        { type: "put", sublevel: "turns", key: turnId, value: record },
        { type: "put", sublevel: "journal", key: `${turnId}:input`, value: { input } },
      ],
      { sync: true },
    );
    const detail = await turnDetail(store, turnId, (t) => t);
    expect(detail?.state).toBe("awaiting_model");
    expect(detail?.sessionKey).toBe("api:web");
    await store.close();
  });
});
