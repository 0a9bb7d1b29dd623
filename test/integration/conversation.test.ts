import { describe, expect, it } from "vitest";
import { createConversation } from "../../actors/conversation.js";
import { defaultConfig } from "../../src/config/index.js";
import { getSessionMeta, sessionMessages } from "../../src/store/sessions.js";
import { getTurn, listOpenTurns, turnInputSchema } from "../../src/store/turns.js";
import { z } from "zod";
import type { Store } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { countingTools, turnDeps } from "../helpers/turn-env.js";
import { useTempDirs } from "../helpers/tmp.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { until } from "../helpers/wait.js";

describe("conversation", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let store: Store | undefined;
  closeAfterEach(() => [store, fake]);

  it("stores the user message with the turn's first checkpoint, durable before the model's answer is taken, and the whole turn after", async () => {
    fake = await startFakeOpenAi([], async (_req, i) =>
      i === 0 ? { toolCalls: [{ id: "x", name: "lookup", arguments: { word: "w", delayMs: 1 } }] } : { content: "answer" },
    );
    const deps = await turnDeps(await tempDir(), fake.url, countingTools().registry);
    store = deps.store;
    // Read as the first answer is taken (the turn enters awaiting_tools): the session holds the user message.
    const storedAtAnswer: Array<Promise<string[]>> = [];
    deps.bus!.ofType("turn_state").subscribe((e) => {
      if (e.state !== "awaiting_tools") return;
      storedAtAnswer.push(getSessionMeta(deps.store, "cli:a").then(async (meta) => (meta ? (await sessionMessages(deps.store, meta)).map((m) => m.message.role) : [])));
    });
    const conversation = createConversation({ ...deps, config: defaultConfig() });
    const reply = await conversation.handle({ sessionKey: "cli:a", channel: "cli", chatId: "a", content: "question" });
    expect(reply).toMatchObject({ content: "answer", state: "responded" });
    expect(await Promise.all(storedAtAnswer)).toEqual([["user"]]);
    const meta = await getSessionMeta(store, "cli:a");
    expect((await sessionMessages(store, meta!)).map((m) => m.message.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(meta?.turns).toBe(1);
    expect(meta?.usage.totalTokens).toBe(30);
  });

  it("a turn's stored input refers to the session's history instead of copying it, and resumes with it whole", async () => {
    const seen: Array<{ stored: number; loaded: string[] }> = [];
    fake = await startFakeOpenAi([], async (req, i) => {
      if (i === 2) {
        // The second turn, at its first model call: its input as stored and as a resumed turn gets it
        // (its first checkpoint is written while the call is made; the answer is taken once it is durable).
        const open = await until(async () => (await listOpenTurns(store as Store, "cli:a"))[0], 10_000, "the turn's first checkpoint");
        const raw = await (store as Store).get("journal", `${open!.turnId}:input`, z.object({ input: turnInputSchema }));
        const record = await getTurn(store as Store, open!.turnId);
        seen.push({ stored: raw!.input.messages.length, loaded: record!.input!.messages.map((m) => `${m.role}:${typeof m.content === "string" ? m.content.slice(0, 20) : ""}`) });
        expect(record!.input!.messages).toEqual(req.body.messages.slice(0, record!.input!.messages.length));
      }
      return i === 0 ? { toolCalls: [{ id: "x", name: "lookup", arguments: { word: "w", delayMs: 1 } }] } : { content: `answer ${i}` };
    });
    const deps = await turnDeps(await tempDir(), fake.url, countingTools().registry);
    store = deps.store;
    const conversation = createConversation({ ...deps, config: defaultConfig() });
    await conversation.handle({ sessionKey: "cli:a", channel: "cli", chatId: "a", content: "first" });
    const reply = await conversation.handle({ sessionKey: "cli:a", channel: "cli", chatId: "a", content: "second" });
    expect(reply.content).toBe("answer 2");
    // Stored: the system prompt and the new message; loaded: the four messages of the first turn between them.
    expect(seen).toHaveLength(1);
    expect(seen[0]!.stored).toBe(2);
    expect(seen[0]!.loaded.map((m) => m.split(":")[0])).toEqual(["system", "user", "assistant", "tool", "assistant", "user"]);
    expect(seen[0]!.loaded[1]).toBe("user:first");
  });

  it("with checkpoints off (durable: false, for measuring their cost) the session is the same: the user message is kept and the next turn is sent the history", async () => {
    const sent: string[][] = [];
    fake = await startFakeOpenAi([], async (req, i) => {
      sent.push(req.body.messages.map((m: { role: string; content?: unknown }) => `${m.role}:${typeof m.content === "string" ? m.content.slice(0, 12) : ""}`));
      return i % 2 === 0 ? { toolCalls: [{ id: `x${i}`, name: "lookup", arguments: { word: "w", delayMs: 1 } }] } : { content: `answer ${i}` };
    });
    const deps = await turnDeps(await tempDir(), fake.url, countingTools().registry);
    store = deps.store;
    const conversation = createConversation({ ...deps, config: defaultConfig(), durable: false });
    await conversation.handle({ sessionKey: "cli:a", channel: "cli", chatId: "a", content: "first" });
    const reply = await conversation.handle({ sessionKey: "cli:a", channel: "cli", chatId: "a", content: "second" });
    expect(reply.content).toBe("answer 3");
    const meta = await getSessionMeta(store, "cli:a");
    expect((await sessionMessages(store, meta!)).map((m) => m.message.role)).toEqual(["user", "assistant", "tool", "assistant", "user", "assistant", "tool", "assistant"]);
    // The second turn's first call: the first turn whole between the system prompt and the new message.
    expect(sent[2]!.map((m) => m.split(":")[0])).toEqual(["system", "user", "assistant", "tool", "assistant", "user"]);
    expect(sent[2]![1]).toBe("user:first");
  });
});
