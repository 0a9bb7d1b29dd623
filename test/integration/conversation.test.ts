import { afterEach, describe, expect, it } from "vitest";
import { createConversation } from "../../actors/conversation.js";
import { defaultConfig } from "../../src/config/index.js";
import { getSessionMeta, sessionMessages } from "../../src/store/sessions.js";
import type { Store } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { countingTools, turnDeps } from "../helpers/turn-env.js";
import { useTempDirs } from "../helpers/tmp.js";

describe("conversation", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let store: Store | undefined;
  afterEach(async () => {
    await store?.close();
    await fake?.close();
  });

  it("stores the user message before the model is called, and the whole turn after", async () => {
    const storedWhenCalled: string[][] = [];
    fake = await startFakeOpenAi([], async (_req, i) => {
      const meta = await getSessionMeta(store as Store, "cli:a");
      storedWhenCalled.push(meta ? (await sessionMessages(store as Store, meta)).map((m) => m.message.role) : []);
      return i === 0 ? { toolCalls: [{ id: "x", name: "lookup", arguments: { word: "w", delayMs: 1 } }] } : { content: "answer" };
    });
    const deps = await turnDeps(await tempDir(), fake.url, countingTools().registry);
    store = deps.store;
    const conversation = createConversation({ ...deps, config: defaultConfig() });
    const reply = await conversation.handle({ sessionKey: "cli:a", channel: "cli", chatId: "a", content: "question" });
    expect(reply).toMatchObject({ content: "answer", state: "responded" });
    expect(storedWhenCalled).toEqual([["user"], ["user"]]);
    const meta = await getSessionMeta(store, "cli:a");
    expect((await sessionMessages(store, meta!)).map((m) => m.message.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(meta?.turns).toBe(1);
    expect(meta?.usage.totalTokens).toBe(30);
  });
});
