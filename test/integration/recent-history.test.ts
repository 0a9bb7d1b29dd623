import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createConversation } from "../../actors/conversation.js";
import { defaultConfig } from "../../src/config/index.js";
import type { Store } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { countingTools, turnDeps } from "../helpers/turn-env.js";
import { useTempDirs } from "../helpers/tmp.js";
import { closeAfterEach } from "../helpers/teardown.js";

describe("Recent History in a turn's system prompt", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let store: Store | undefined;
  closeAfterEach(() => [store, fake]);

  it("a Telegram chat's summarised conversation reaches neither the CLI, nor another chat, nor a cron job", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "ok" }));
    const dir = await tempDir();
    await mkdir(join(dir, "memory"), { recursive: true });
    const entry = { cursor: 1, timestamp: "2026-01-01 10:00", content: "User alice told me her bank PIN is 4821", session_key: "telegram:111" };
    await writeFile(join(dir, "memory", "history.jsonl"), `${JSON.stringify(entry)}\n`);
    await writeFile(join(dir, "memory", ".cursor"), "1\n");
    const deps = await turnDeps(dir, fake.url, countingTools().registry, false);
    store = deps.store;
    const conversation = createConversation({ ...deps, config: defaultConfig() });
    const systemOf = async (sessionKey: string) => {
      const [channel, chatId] = sessionKey.split(":") as [string, string];
      await conversation.handle({ sessionKey, channel, chatId, content: "hi" });
      return String(fake!.requests.at(-1)!.body.messages[0]!.content);
    };
    for (const key of ["cli:direct", "telegram:222", "cron:job-1"]) expect(await systemOf(key)).not.toContain("4821");
    expect(await systemOf("telegram:111")).toContain("- [2026-01-01 10:00] User alice told me her bank PIN is 4821");
  });
});
