import { describe, expect, it } from "vitest";
import { createConsolidator } from "../../src/memory/consolidator.js";
import { createMemoryFiles } from "../../src/memory/files.js";
import { exactCost } from "../../src/memory/tokens.js";
import type { ChatMessage } from "../../src/providers/messages.js";
import { appendMessagesOps, getSessionMeta, newSessionMeta } from "../../src/store/sessions.js";
import type { Store } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { countingTools, turnDeps } from "../helpers/turn-env.js";
import { useTempDirs } from "../helpers/tmp.js";

/**
 * A live session's Consolidator keeps its messages and their token sums between turns (appended in
 * place, archived ranges taken off); it must archive exactly what one reading the session afresh
 * every turn archives, at the same turns, and estimate the same prompt.
 */

const words = (n: number, w: string) => Array.from({ length: n }, (_, i) => `${w}${i % 7}`).join(" ");

/** Turn i's messages: sizes vary, some turns use a tool, some end with a failure notice shown only. */
function turn(i: number): { messages: ChatMessage[]; shownOnly: boolean } {
  const size = 20 + ((i * 37) % 90);
  const messages: ChatMessage[] = [{ role: "user", content: `question ${i} ${words(size, "apple")}` }];
  if (i % 3 === 0) {
    messages.push({ role: "assistant", content: null, tool_calls: [{ id: `c${i}`, type: "function", function: { name: "list_dir", arguments: "{}" } }] });
    messages.push({ role: "tool", tool_call_id: `c${i}`, name: "list_dir", content: words(size * 2, "file") });
  }
  messages.push({ role: "assistant", content: `answer ${i} ${words(size, "pear")}` });
  return { messages, shownOnly: i % 11 === 5 };
}

describe("the Consolidator of a live session", () => {
  const tempDir = useTempDirs();
  const opened: Array<Store | FakeOpenAi> = [];
  closeAfterEach(() => opened.splice(0));

  async function session() {
    const fake = await startFakeOpenAi([], () => ({ content: "- [durable] the user asked about fruit" }));
    const dir = await tempDir();
    const deps = await turnDeps(dir, fake.url, countingTools().registry, false);
    opened.push(deps.store, fake);
    const files = createMemoryFiles(dir);
    const consolidator = () => createConsolidator({ store: deps.store, provider: deps.provider, files, budget: 3_000, fixedTokens: async () => exactCost(200) });
    return { store: deps.store, files, consolidator };
  }

  async function append(store: Store, i: number) {
    const { messages, shownOnly } = turn(i);
    const meta = (await getSessionMeta(store, "t:1")) ?? newSessionMeta("t:1", 1_000);
    await store.batch(appendMessagesOps(meta, messages, `turn-${i}`, 1_000 + i, undefined, true, (k) => shownOnly && k === messages.length - 1).ops, { sync: true });
  }

  it("archives the same ranges at the same turns, and estimates the same, as one that reads the session afresh each turn", async () => {
    const live = await session();
    const fresh = await session();
    const kept = live.consolidator();
    const trace: Array<{ turn: number; live: unknown; fresh: unknown }> = [];
    for (let i = 0; i < 120; i++) {
      await append(live.store, i);
      await append(fresh.store, i);
      const a = await kept.consolidateAndView("t:1");
      const anew = fresh.consolidator();
      const b = await anew.consolidateAndView("t:1");
      const statusA = await kept.status("t:1");
      const statusB = await anew.status("t:1");
      trace.push({ turn: i, live: { rounds: a.rounds, lastConsolidated: a.view?.state.lastConsolidated, statusA }, fresh: { rounds: b.rounds, lastConsolidated: b.view?.state.lastConsolidated, statusA: statusB } });
      expect(a.view?.messages.map((m) => m.seq)).toEqual(b.view?.messages.map((m) => m.seq));
    }
    expect(trace.map((t) => t.live)).toEqual(trace.map((t) => t.fresh));
    const archived = async (files: typeof live.files) => (await files.readHistory()).map((e) => e.archived);
    const ranges = await archived(live.files);
    // The session consolidated several times over the 120 turns, each time from where the last stopped.
    expect(ranges.length).toBeGreaterThan(5);
    expect(ranges).toEqual(await archived(fresh.files));
    ranges.forEach((r, k) => k && expect(r!.from).toBe(ranges[k - 1]!.to));
  });
});
