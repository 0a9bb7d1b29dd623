import { describe, expect, it } from "vitest";
import { createConsolidator } from "../../src/memory/consolidator.js";
import { createMemoryFiles } from "../../src/memory/files.js";
import { exactCost, forgetCounts, messageTokens, messageTokensBound } from "../../src/memory/tokens.js";
import { forgetEncoded, requestBody } from "../../src/providers/request-body.js";
import type { ChatMessage } from "../../src/providers/messages.js";
import { appendMessagesOps, getSessionMeta, newSessionMeta } from "../../src/store/sessions.js";
import type { Store } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { countingTools, turnDeps } from "../helpers/turn-env.js";
import { useTempDirs } from "../helpers/tmp.js";

/**
 * What is kept beside a session's message objects (request bytes, token counts: WeakMaps keyed by
 * the message) goes when the session's actor ends or the message is archived, not at V8's next full
 * collection: the soak showed those tables growing with every passivated session's history.
 */

const words = (n: number, w: string) => Array.from({ length: n }, (_, i) => `${w}${i % 7}`).join(" ");

function turn(i: number): ChatMessage[] {
  const size = 20 + ((i * 37) % 90);
  return [
    { role: "user", content: `question ${i} ${words(size, "apple")}` },
    { role: "assistant", content: null, tool_calls: [{ id: `c${i}`, type: "function", function: { name: "list_dir", arguments: "{}" } }] },
    { role: "tool", tool_call_id: `c${i}`, name: "list_dir", content: words(size * 2, "file") },
    { role: "assistant", content: `answer ${i} ${words(size, "pear")}` },
  ];
}

/** What a turn does with a session's history: counts it and encodes it as a request. */
function send(messages: ChatMessage[]) {
  for (const m of messages) {
    messageTokens(m);
    messageTokensBound(m);
  }
  requestBody({ model: "m", messages });
}

/** Whether anything was still kept beside the message (and lets go of it). */
const keptBeside = (m: ChatMessage) => [forgetCounts(m), forgetEncoded(m)].some(Boolean);

describe("what is kept beside a session's messages", () => {
  const tempDir = useTempDirs();
  const opened: Array<Store | FakeOpenAi> = [];
  closeAfterEach(() => opened.splice(0));

  async function setup(budget: number) {
    const fake = await startFakeOpenAi([], () => ({ content: "- [durable] the user listed files" }));
    const dir = await tempDir();
    const deps = await turnDeps(dir, fake.url, countingTools().registry, false);
    opened.push(deps.store, fake);
    const consolidator = createConsolidator({ store: deps.store, provider: deps.provider, files: createMemoryFiles(dir), budget, fixedTokens: async () => exactCost(200) });
    const append = async (key: string, i: number) => {
      const meta = (await getSessionMeta(deps.store, key)) ?? newSessionMeta(key, 1_000);
      await deps.store.batch(appendMessagesOps(meta, turn(i), `${key}-turn-${i}`, 1_000 + i, undefined, true, () => false).ops, { sync: true });
    };
    return { consolidator, append };
  }

  it("goes when the session's actor ends (forget), and stays for a session still live", async () => {
    const { consolidator, append } = await setup(100_000);
    for (let i = 0; i < 5; i++) {
      await append("t:ended", i);
      await append("t:live", i);
    }
    const ended = consolidator.unarchived((await consolidator.view("t:ended"))!).messages;
    const live = consolidator.unarchived((await consolidator.view("t:live"))!).messages;
    send(ended);
    send(live);
    expect(ended).toHaveLength(20);
    consolidator.forget("t:ended");
    expect(ended.filter(keptBeside)).toEqual([]);
    expect(live.filter(keptBeside)).toHaveLength(live.length);
  });

  it("goes when the message is archived", async () => {
    const { consolidator, append } = await setup(3_000);
    const seen = new Map<number, ChatMessage>();
    let lastConsolidated = 0;
    for (let i = 0; i < 40; i++) {
      await append("t:1", i);
      const { view } = await consolidator.consolidateAndView("t:1");
      const { messages, seqOf } = consolidator.unarchived(view!);
      send(messages);
      messages.forEach((m, k) => seen.set(seqOf(k), m));
      lastConsolidated = view!.state.lastConsolidated;
    }
    const archived = [...seen].filter(([seq]) => seq < lastConsolidated).map(([, m]) => m);
    const unarchived = [...seen].filter(([seq]) => seq >= lastConsolidated).map(([, m]) => m);
    // It consolidated: most of what was sent is archived by now.
    expect(archived.length).toBeGreaterThan(40);
    expect(archived.filter(keptBeside)).toEqual([]);
    expect(unarchived.filter(keptBeside)).toHaveLength(unarchived.length);
  });
});
