import { countTokens } from "gpt-tokenizer";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createConversation } from "../../actors/conversation.js";
import { defaultConfig } from "../../src/config/index.js";
import type { Store } from "../../src/store/store.js";
import { defineTool } from "../../src/tools/contract.js";
import { createToolRegistry } from "../../src/tools/registry.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { turnDeps } from "../helpers/turn-env.js";
import { useTempDirs } from "../helpers/tmp.js";
import { closeAfterEach } from "../helpers/teardown.js";

describe("fitting every model call to the window", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let store: Store | undefined;
  closeAfterEach(() => [store, fake]);

  it("a turn whose tool results outgrow the window finishes without a provider error", async () => {
    const window = 8_000;
    const maxTokens = 1_000;
    const sizes: number[] = [];
    // A provider that refuses, as real ones do, a request that leaves no room for the reply.
    fake = await startFakeOpenAi([], (req, i) => {
      const tokens = countTokens(JSON.stringify(req.body.messages)) + countTokens(JSON.stringify(req.body.tools ?? []));
      sizes.push(tokens);
      if (tokens > window - maxTokens) return { status: 400, errorMessage: `This model's maximum context length is ${window} tokens (requested ${tokens})` };
      return i < 12 ? { toolCalls: [{ name: "dump", arguments: { part: i } }] } : { content: "all parts read" };
    });
    const dir = await tempDir();
    const registry = createToolRegistry([
      defineTool({
        name: "dump",
        description: "Prints a long log part.",
        parameters: z.object({ part: z.number() }),
        execute: async ({ part }) => `part ${part}: ${Array.from({ length: 1_500 }, (_, j) => `line${j}`).join(" ")}`,
      }),
    ]);
    const deps = await turnDeps(dir, fake.url, registry, false);
    store = deps.store;
    const config = defaultConfig();
    config.agents.defaults.contextWindowTokens = window;
    config.agents.defaults.maxTokens = maxTokens;
    const conversation = createConversation({ ...deps, config });
    const reply = await conversation.handle({ sessionKey: "cli:x", channel: "cli", chatId: "x", content: "read all the parts" });
    expect(reply).toMatchObject({ state: "responded", content: "all parts read" });
    expect(sizes.length).toBe(13);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(window - maxTokens);
    // Without fitting, the later requests would have been far over the window.
    expect(12 * 1_500).toBeGreaterThan(window);
    // The newest result always reaches the model whole.
    const last = fake.requests.at(-1)!.body.messages;
    expect(String(last.at(-1)!.content)).toMatch(/^part 11: line0/);
  });
});
