import { describe, expect, it } from "vitest";
import { createConversation } from "../../actors/conversation.js";
import { defaultConfig } from "../../src/config/index.js";
import type { ListOptions, Store } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { useTempDirs } from "../helpers/tmp.js";
import { countingTools, turnDeps } from "../helpers/turn-env.js";
import { closeAfterEach } from "../helpers/teardown.js";

const msg = (content: string) => ({ sessionKey: "cli:a", channel: "cli", chatId: "a", content });

describe("a session's history is read once while its actor lives", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let store: Store | undefined;
  closeAfterEach(() => [store, fake]);

  it("later turns read only the messages appended since, and the model still gets the whole history", async () => {
    fake = await startFakeOpenAi([], async (_req, i) => ({ content: `answer ${i}` }));
    const deps = await turnDeps(await tempDir(), fake.url, countingTools().registry);
    store = deps.store;
    // Reads of the session's messages: whole (no lower bound) or from a seq on.
    const reads: Array<"whole" | "tail"> = [];
    const list = deps.store.list.bind(deps.store);
    deps.store.list = ((sublevel: Parameters<Store["list"]>[0], schema: never, opts: ListOptions & { prefix?: string; gte?: string } = {}) => {
      if (sublevel === "sessions" && opts.prefix?.startsWith("msg:")) reads.push(opts.gte ? "tail" : "whole");
      return list(sublevel, schema, opts);
    }) as Store["list"];
    const conversation = createConversation({ ...deps, config: defaultConfig() });

    for (const word of ["one", "two", "three", "four"]) await conversation.handle(msg(word));
    expect(reads.filter((r) => r === "whole")).toHaveLength(1);
    expect(reads.filter((r) => r === "tail").length).toBeGreaterThan(0);
    const last = fake.requests.at(-1)!.body.messages.map((m) => `${m.role}:${String(m.content).split("\n").at(-1)}`);
    expect(last.slice(1)).toEqual(["user:one", "assistant:answer 0", "user:two", "assistant:answer 1", "user:three", "assistant:answer 2", "user:four"]);

    // The actor ended: its next start reads the session afresh, once.
    conversation.forget("cli:a");
    reads.length = 0;
    await conversation.handle(msg("five"));
    await conversation.handle(msg("six"));
    expect(reads.filter((r) => r === "whole")).toHaveLength(1);
    expect(fake.requests.at(-1)!.body.messages.filter((m) => m.role === "user")).toHaveLength(6);

    // /new starts an epoch: nothing of the old one is shown, and the new one is read from its start.
    await conversation.handle(msg("/new"));
    await conversation.handle(msg("seven"));
    expect(fake.requests.at(-1)!.body.messages.filter((m) => m.role !== "system").map((m) => String(m.content).split("\n").at(-1))).toEqual(["seven"]);
  });
});
