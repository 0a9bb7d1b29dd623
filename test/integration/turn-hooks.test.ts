import type { Logger } from "pino";
import { describe, expect, it } from "vitest";
import { startTurn } from "../../actors/turn.js";
import { composeHooks, type AgentHook } from "../../src/hooks/hook.js";
import { getTurn } from "../../src/store/turns.js";
import { finalizeJournal, stateJournal } from "../../src/store/turn-journal.js";
import type { Store } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { countingTools, turnDeps, turnInput } from "../helpers/turn-env.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";

/** Records each call with what the hook saw; finalizeContent appends a footer. */
function tracer(calls: string[]): AgentHook {
  return {
    name: "tracer",
    beforeIteration: (c) => void calls.push(`beforeIteration ${c.iteration} (${c.messages.length} messages)`),
    onStream: (c, delta) => {
      const last = calls.at(-1);
      if (last?.startsWith(`onStream ${c.iteration} `)) calls[calls.length - 1] = last + delta;
      else calls.push(`onStream ${c.iteration} ${delta}`);
    },
    onStreamEnd: (c, { resuming }) => void calls.push(`onStreamEnd ${c.iteration} resuming=${resuming}`),
    beforeExecuteTools: (c) => void calls.push(`beforeExecuteTools ${c.iteration} ${c.toolCalls.map((t) => t.name).join(",")}`),
    afterIteration: (c) => void calls.push(`afterIteration ${c.iteration} ${c.stopReason} ${c.toolResults?.join("|") ?? c.finalContent}`),
    finalizeContent: (c, content) => {
      calls.push(`finalizeContent ${c.iteration} ${content} (${c.sessionKey} ${c.channel}/${c.chatId})`);
      return `${content}\n-- signed`;
    },
  };
}

const toolThenAnswer = () => [{ content: "Looking.", toolCalls: [{ id: "a1", name: "lookup", arguments: { word: "alpha", delayMs: 1 } }] }, { content: "Alpha is a letter." }];

describe("hooks inside the turn actor", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let store: Store | undefined;
  closeAfterEach(() => [store, fake]);

  it("runs every point in loop order; finalizeContent's reply is what the turn stores and answers, checkpointed as finalised", async () => {
    fake = await startFakeOpenAi(toolThenAnswer());
    const tools = countingTools();
    const calls: string[] = [];
    const deps = await turnDeps(await tempDir(), fake.url, tools.registry);
    store = deps.store;
    const { logger, errors } = errorLogger();
    // A broken hook first: it is skipped at every point, and the turn goes on.
    const hooks = composeHooks([broken, tracer(calls)], logger);
    const result = await startTurn({ ...deps, hooks }, { input: turnInput("h1", "define alpha") }).done;

    expect(result.state).toBe("responded");
    expect(result.output.reply).toBe("Alpha is a letter.\n-- signed");
    expect(result.output.newMessages.at(-1)).toEqual({ role: "assistant", content: "Alpha is a letter.\n-- signed" });
    expect(calls).toEqual([
      "beforeIteration 0 (2 messages)",
      "onStream 0 Looking.",
      "onStreamEnd 0 resuming=true",
      "beforeExecuteTools 0 lookup",
      "afterIteration 0 tool_calls definition of alpha",
      "beforeIteration 1 (4 messages)",
      "onStream 1 Alpha is a letter.",
      "onStreamEnd 1 resuming=false",
      "finalizeContent 1 Alpha is a letter. (test:1 test/1)",
      "afterIteration 1 completed Alpha is a letter.\n-- signed",
    ]);
    // Every point of the broken hook failed (onStream once per streamed piece), and was skipped.
    expect(new Set(errors)).toEqual(new Set(["beforeIteration", "onStream", "onStreamEnd", "beforeExecuteTools", "afterIteration", "finalizeContent"].map((p) => `hook broken failed in ${p}; skipped`)));
    expect(errors.filter((e) => e.includes("in finalizeContent"))).toHaveLength(1);

    const states = (await stateJournal(store, "h1")).map((j) => j.state);
    expect(states).toEqual(["awaiting_model", "awaiting_tools", "tools_completed", "awaiting_model", "finalizing_content", "responded"]);
    const record = await getTurn(store, "h1");
    expect(record?.snapshot.context).toMatchObject({ finalized: true, reply: "Alpha is a letter.\n-- signed" });
    expect(await finalizeJournal(store, "h1", record!.seq - 1)).toMatchObject({ status: "completed", content: "Alpha is a letter.\n-- signed" });
  });

  it("without hooks a turn takes no extra state (no extra checkpoint)", async () => {
    fake = await startFakeOpenAi([{ content: "hi" }]);
    const deps = await turnDeps(await tempDir(), fake.url, countingTools().registry);
    store = deps.store;
    await startTurn({ ...deps, hooks: composeHooks([]) }, { input: turnInput("h0", "hello") }).done;
    expect((await stateJournal(store, "h0")).map((j) => j.state)).toEqual(["awaiting_model", "responded"]);
  });

  /** Runs a turn whose hook blocks at `point`, stops it there (troupe stopped), and resumes it with a fresh tracer. */
  async function interruptAt(point: "finalizeContent" | "afterIteration") {
    fake = await startFakeOpenAi([{ content: "The answer." }]);
    const deps = await turnDeps(await tempDir(), fake.url, countingTools().registry);
    store = deps.store;
    const first: string[] = [];
    const blocking = tracer(first);
    const inner = blocking[point]!.bind(blocking) as (...a: unknown[]) => unknown;
    (blocking as Record<string, unknown>)[point] = (...args: unknown[]) => {
      inner(...args);
      return new Promise(() => undefined);
    };
    const handle = startTurn({ ...deps, hooks: composeHooks([blocking]) }, { input: turnInput("hr", "question") });
    await until(async () => (first.some((c) => c.startsWith(point)) ? true : undefined), 20_000, `the hook's ${point}`);
    await handle.stop();
    const record = await getTurn(deps.store, "hr");
    expect(record?.state).toBe("finalizing_content");

    const again: string[] = [];
    const result = await startTurn({ ...deps, hooks: composeHooks([tracer(again)]) }, { record: record! }).done;
    return { first, again, result, requests: fake.requests.length };
  }

  it("resumed after finalizeContent completed: the stored content is the reply, and no hook runs again", async () => {
    const { first, again, result, requests } = await interruptAt("afterIteration");
    expect(first.filter((c) => c.startsWith("finalizeContent"))).toHaveLength(1);
    expect(again).toEqual([]);
    expect(result.output.reply).toBe("The answer.\n-- signed");
    // The answer was checkpointed before the hooks: the model is not asked again.
    expect(requests).toBe(1);
  });

  it("an answer cut off at the token limit reaches finalizeContent once, joined from its continuations", async () => {
    fake = await startFakeOpenAi([{ content: "Alpha is ", finishReason: "length" }, { content: "a letter." }]);
    const calls: string[] = [];
    const deps = await turnDeps(await tempDir(), fake.url, countingTools().registry);
    store = deps.store;
    const hooks = composeHooks([tracer(calls)], errorLogger().logger);
    const result = await startTurn({ ...deps, hooks }, { input: turnInput("h-cut", "define alpha") }).done;
    expect(result.output.reply).toBe("Alpha is a letter.\n-- signed");
    expect(calls.filter((c) => c.startsWith("finalizeContent"))).toEqual(["finalizeContent 0 Alpha is a letter. (test:1 test/1)"]);
    expect(result.output.newMessages.at(-1)).toEqual({ role: "assistant", content: "Alpha is a letter.\n-- signed" });
    expect((await stateJournal(store, "h-cut")).map((j) => j.state)).toEqual(["awaiting_model", "awaiting_model", "finalizing_content", "responded"]);
  });

  it("resumed while finalizeContent ran: the model's answer is sent as it was, and the hook is not run on it twice", async () => {
    const { first, again, result, requests } = await interruptAt("finalizeContent");
    expect(first.filter((c) => c.startsWith("finalizeContent"))).toHaveLength(1);
    expect(again).toEqual([]);
    expect(result.state).toBe("responded");
    expect(result.output.reply).toBe("The answer.");
    expect(requests).toBe(1);
  });
});

const broken: AgentHook = {
  name: "broken",
  beforeIteration: () => {
    throw new Error("x");
  },
  onStream: () => {
    throw new Error("x");
  },
  onStreamEnd: () => {
    throw new Error("x");
  },
  beforeExecuteTools: () => {
    throw new Error("x");
  },
  afterIteration: () => {
    throw new Error("x");
  },
  finalizeContent: () => {
    throw new Error("x");
  },
};

function errorLogger() {
  const errors: string[] = [];
  const logger = { error: (_obj: unknown, msg: string) => void errors.push(msg) } as unknown as Pick<Logger, "error">;
  return { logger, errors };
}
