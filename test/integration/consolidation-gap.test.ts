import { describe, expect, it } from "vitest";
import { createConsolidator } from "../../src/memory/consolidator.js";
import { createMemoryFiles } from "../../src/memory/files.js";
import { consolidationStateOp, getConsolidationState } from "../../src/memory/session-state.js";
import { exactCost } from "../../src/memory/tokens.js";
import { appendMessagesOps, getSessionMeta, newSessionMeta } from "../../src/store/sessions.js";
import type { Store } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { countingTools, turnDeps } from "../helpers/turn-env.js";
import { useTempDirs } from "../helpers/tmp.js";

describe("the Consolidator on a session whose stored seqs have a gap (a record lost to damage)", () => {
  const tempDir = useTempDirs();
  const opened: Array<Store | FakeOpenAi> = [];
  closeAfterEach(() => opened.splice(0));

  it("gives the turn the messages at positions from lastConsolidated, as estimate() counts them (a seq can be past its position)", async () => {
    const fake = await startFakeOpenAi([], () => ({ content: "summary" }));
    const dir = await tempDir();
    const deps = await turnDeps(dir, fake.url, countingTools().registry, false);
    opened.push(deps.store, fake);
    const store = deps.store;
    for (let i = 0; i < 10; i++) {
      const meta = (await getSessionMeta(store, "t:1")) ?? newSessionMeta("t:1", 1_000);
      await store.batch(appendMessagesOps(meta, [{ role: "user", content: `q${i}` }, { role: "assistant", content: `a${i}` }], `turn-${i}`, 1_000 + i).ops, { sync: true });
    }
    // seq 3 lost: positions 3.. hold seqs 4..
    await store.batch([{ type: "del", sublevel: "sessions", key: `msg:t:1\x00${"0".padStart(6, "0")}:${"3".padStart(9, "0")}` }], { sync: true });
    const meta = (await getSessionMeta(store, "t:1"))!;
    const state = await getConsolidationState(store, meta);
    await store.batch([consolidationStateOp("t:1", { ...state, lastConsolidated: 6 })], { sync: true });
    const c = createConsolidator({ store, provider: deps.provider, files: createMemoryFiles(dir), budget: 100_000, fixedTokens: async () => exactCost(0) });
    const v = (await c.view("t:1"))!;
    const old = v.messages.slice(v.state.lastConsolidated).filter((m) => !m.shownOnly).map((m) => m.message);
    const now = c.unarchived(v).messages;
    expect(now.map((m) => m.content)).toEqual(["q3", "a3", "q4", "a4", "q5", "a5", "q6", "a6", "q7", "a7", "q8", "a8", "q9", "a9"].slice(1));
    expect(now).toEqual(old);
  });
});
