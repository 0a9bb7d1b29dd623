import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { startTurn, type TurnDeps } from "../../actors/turn.js";
import { EMPTY_FINAL_RESPONSE_MESSAGE, FINALIZATION_RETRY_PROMPT } from "../../src/context/loop-texts.js";
import type { ChatRequest, LlmProvider } from "../../src/providers/client.js";
import type { ModelResponse, ParsedToolCall } from "../../src/providers/messages.js";
import { LOST_TOOL_RESULT } from "../../src/providers/history.js";
import { openStore, type Store } from "../../src/store/store.js";
import { getTurn, type TurnRecord } from "../../src/store/turns.js";
import { stateJournal } from "../../src/store/turn-journal.js";
import { defineTool } from "../../src/tools/contract.js";
import { createToolRegistry } from "../../src/tools/registry.js";
import { REPEATED_LOOKUP_NOTE } from "../../src/tools/repeated-lookup.js";
import { messagedOwnChat } from "../../machines/turn.machine.js";
import { turnInput } from "../helpers/turn-env.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";

/** The cases of nanobot's runner tests (tests/agent/test_runner_core.py, test_runner_tool_execution.py) on troupe's turn machine. */

type Step = Partial<ModelResponse> & { hang?: boolean };
const usage = { promptTokens: 5, completionTokens: 1, totalTokens: 6 };
const call = (name: string, args: Record<string, unknown>, id = `c${Math.random().toString(36).slice(2, 8)}`): ParsedToolCall => ({
  id,
  name,
  rawArguments: JSON.stringify(args),
  arguments: args,
});

/** A model that answers from a script and records what it was sent; a `hang` step waits until the call is aborted. */
function scriptedModel(script: Step[]) {
  const requests: ChatRequest[] = [];
  const provider: LlmProvider = {
    name: "scripted",
    model: "scripted",
    chat: async (req) => {
      requests.push(req);
      const step = script.shift() ?? { content: "(script exhausted)" };
      if (step.hang) {
        return new Promise<ModelResponse>((_, reject) => req.signal?.addEventListener("abort", () => reject(req.signal?.reason), { once: true }));
      }
      return { content: "", toolCalls: [], finishReason: "stop", usage, ...step };
    },
  };
  return { provider, requests };
}

describe("turn loop (nanobot's runner cases)", () => {
  const tempDir = useTempDirs();
  let store: Store | undefined;
  afterEach(async () => {
    await store?.close();
    store = undefined;
  });

  const fetches: string[] = [];
  const registry = createToolRegistry([
    defineTool({
      name: "web_fetch",
      description: "Fetches a page (a stand-in).",
      parameters: z.object({ url: z.string() }),
      readOnly: true,
      execute: async ({ url }) => (fetches.push(url), `page content of ${url}`),
    }),
    defineTool({
      name: "read_file",
      description: "Reads a file (a stand-in).",
      parameters: z.object({ path: z.string() }),
      readOnly: true,
      execute: async ({ path }) => `content of ${path}`,
    }),
  ]);

  async function deps(provider: LlmProvider): Promise<TurnDeps & { store: Store }> {
    store ??= await openStore(join(await tempDir(), "store"));
    return { store, provider, registry, workspace: "/tmp" };
  }

  it("retries an empty answer, then asks once without tools, and uses that answer", async () => {
    const model = scriptedModel([{}, {}, { content: "final answer", usage: { promptTokens: 3, completionTokens: 7, totalTokens: 10 } }]);
    const d = await deps(model.provider);
    const result = await startTurn(d, { input: turnInput("e1", "do task") }).done;

    expect(result.state).toBe("responded");
    expect(result.output.reply).toBe("final answer");
    expect(model.requests.map((r) => r.tools.length > 0)).toEqual([true, true, false]);
    // The finalization prompt goes with the last request only, and is never stored.
    expect(model.requests[2]?.messages.at(-1)).toEqual({ role: "user", content: `do task\n\n${FINALIZATION_RETRY_PROMPT}` });
    expect(result.output.newMessages).toEqual([{ role: "assistant", content: "final answer" }]);
    expect(result.output.usage).toEqual({ promptTokens: 13, completionTokens: 9, totalTokens: 22 });
    // Each retry is a checkpointed transition.
    expect((await stateJournal(d.store, "e1")).map((j) => j.state)).toEqual(["awaiting_model", "awaiting_model", "finalizing", "responded"]);
  });

  it("ends with a clear fallback text when the request without tools is empty too", async () => {
    const model = scriptedModel([{}, { content: "   " }, {}]);
    const result = await startTurn(await deps(model.provider), { input: turnInput("e2", "do task") }).done;
    expect(result.state).toBe("responded");
    expect(result.output.reply).toBe(EMPTY_FINAL_RESPONSE_MESSAGE);
    expect(model.requests).toHaveLength(3);
    expect(result.output.newMessages).toEqual([{ role: "assistant", content: EMPTY_FINAL_RESPONSE_MESSAGE }]);
  });

  it("at the iteration limit asks once more without tools for a summary, and replies with it (max_iterations)", async () => {
    const summary = "Read the directory twice. More investigation remains.";
    const model = scriptedModel([
      { content: "still working", toolCalls: [call("read_file", { path: "." })] },
      { content: "still working", toolCalls: [call("read_file", { path: "." })] },
      { content: summary, usage: { promptTokens: 10, completionTokens: 7, totalTokens: 17 } },
    ]);
    const d = await deps(model.provider);
    const result = await startTurn(d, { input: turnInput("m1", "inspect the repo", 2) }).done;
    expect(result.state).toBe("max_iterations");
    expect(result.output.reply).toBe(summary);
    expect(result.output.newMessages.at(-1)).toEqual({ role: "assistant", content: summary });
    expect(model.requests.map((r) => r.tools.length > 0)).toEqual([true, true, false]);
    // The budget prompt goes with that request only, and is never stored.
    expect(JSON.stringify(model.requests[2]?.messages.at(-1))).toMatch(/tool-call budget/);
    expect(JSON.stringify(result.output.newMessages)).not.toMatch(/tool-call budget/);
    expect(result.output.usage.totalTokens).toBe(6 + 6 + 17);
    expect((await stateJournal(d.store, "m1")).map((j) => j.state)).toEqual([
      "awaiting_model",
      "awaiting_tools",
      "tools_completed",
      "awaiting_model",
      "awaiting_tools",
      "tools_completed",
      "finalizing_after_limit",
      "max_iterations",
    ]);
  });

  it("at the iteration limit falls back to the fixed text when the summary calls tools, is blank or fails", async () => {
    const lastAnswers: Array<[string, Step]> = [
      ["m2", { content: "still working", toolCalls: [call("read_file", { path: "." })] }],
      ["m3", { content: "  " }],
      ["m4", { finishReason: "error", content: "partial" }],
    ];
    for (const [id, last] of lastAnswers) {
      const model = scriptedModel([
        { content: "still working", toolCalls: [call("read_file", { path: "." })] },
        { content: "still working", toolCalls: [call("read_file", { path: "." })] },
        last,
      ]);
      const result = await startTurn(await deps(model.provider), { input: turnInput(id, "inspect the repo", 2) }).done;
      expect(result.state, id).toBe("max_iterations");
      expect(result.output.reply, id).toMatch(/maximum number of tool iterations \(2\)/);
      expect(result.output.newMessages.at(-1), id).toEqual({ role: "assistant", content: result.output.reply });
      expect(model.requests.map((r) => r.tools.length > 0), id).toEqual([true, true, false]);
    }
    const failing: LlmProvider = {
      name: "failing",
      model: "failing",
      chat: async (req) => {
        if (req.tools.length === 0) throw new Error("model down");
        return { content: "", toolCalls: [call("read_file", { path: "." })], finishReason: "tool_calls", usage };
      },
    };
    const result = await startTurn(await deps(failing), { input: turnInput("m5", "inspect the repo", 2) }).done;
    expect(result.state).toBe("max_iterations");
    expect(result.output.reply).toMatch(/maximum number of tool iterations \(2\)/);
    expect(result.output.error).toBeNull();
  });

  it("an empty answer between tool calls does not break the tool chain", async () => {
    const model = scriptedModel([
      { toolCalls: [call("read_file", { path: "a.txt" })] },
      {},
      { toolCalls: [call("read_file", { path: "b.txt" })] },
      { content: "Here are the results." },
    ]);
    const result = await startTurn(await deps(model.provider), { input: turnInput("e3", "read both files") }).done;
    expect(result.output.reply).toBe("Here are the results.");
    expect(model.requests).toHaveLength(4);
    expect(model.requests.every((r) => r.tools.length > 0)).toBe(true);
    expect(result.output.iteration).toBe(2);
  });

  it("continues an answer cut off at the token limit and joins the parts into one reply", async () => {
    const model = scriptedModel([
      { content: "The quick brown ", finishReason: "length" },
      { content: "fox jumps over ", finishReason: "length" },
      { content: "the lazy dog." },
    ]);
    const d = await deps(model.provider);
    const result = await startTurn(d, { input: turnInput("l1", "write it") }).done;
    expect(result.output.reply).toBe("The quick brown fox jumps over the lazy dog.");
    // The model saw its own part and a prompt quoting where it stopped.
    const second = model.requests[1]?.messages.slice(-2);
    expect(second?.[0]).toMatchObject({ role: "assistant", content: "The quick brown " });
    expect(String(second?.[1]?.content)).toMatch(/cut off[\s\S]*<already_delivered_tail>\nThe quick brown \n<\/already_delivered_tail>/);
    // The session keeps one answer, as the user got it.
    expect(result.output.newMessages).toEqual([{ role: "assistant", content: "The quick brown fox jumps over the lazy dog." }]);
    expect((await stateJournal(d.store, "l1")).map((j) => j.state)).toEqual(["awaiting_model", "awaiting_model", "awaiting_model", "responded"]);
    // Every chain message written on the way was pruned with the final batch.
    expect(await d.store.list("journal", z.unknown(), { prefix: "l1:msg:" })).toEqual([]);
  });

  it("a cut-off answer that goes on with tool calls keeps its text in the calling message, and no continuation prompt in the history", async () => {
    const model = scriptedModel([
      { content: "Here is part one, ", finishReason: "length" },
      { content: "and now a lookup.", toolCalls: [call("read_file", { path: "a.txt" }, "r1")], finishReason: "tool_calls" },
      { content: "Final." },
    ]);
    const result = await startTurn(await deps(model.provider), { input: turnInput("l5", "go") }).done;
    expect(result.output.reply).toBe("Final.");
    const added = result.output.newMessages;
    expect(added.map((m) => m.role)).toEqual(["assistant", "tool", "assistant"]);
    expect(added[0]).toMatchObject({ role: "assistant", content: "Here is part one, and now a lookup." });
    // The request after the tool round carries no invented user message.
    expect(model.requests[2]?.messages.filter((m) => m.role === "user")).toHaveLength(1);
  });

  it("continues at most 3 times, then returns what it has", async () => {
    const model = scriptedModel(["a", "b", "c", "d", "e"].map((content) => ({ content, finishReason: "length" })));
    const result = await startTurn(await deps(model.provider), { input: turnInput("l2", "go") }).done;
    expect(model.requests).toHaveLength(4);
    expect(result.output.reply).toBe("abcd");
  });

  it("answers the same web_fetch URL a third time in a turn with a note, not a request", async () => {
    fetches.length = 0;
    const model = scriptedModel([
      { content: "working", toolCalls: [call("web_fetch", { url: "https://example.com" }, "call_1")] },
      { content: "working", toolCalls: [call("web_fetch", { url: "https://EXAMPLE.com " }, "call_2")] },
      { content: "working", toolCalls: [call("web_fetch", { url: "https://example.com" }, "call_3")] },
      { content: "done" },
    ]);
    const result = await startTurn(await deps(model.provider), { input: turnInput("w1", "research task") }).done;
    expect(result.output.reply).toBe("done");
    expect(fetches).toHaveLength(2);
    const blocked = model.requests[3]?.messages.find((m) => m.role === "tool" && m.tool_call_id === "call_3");
    expect(blocked?.content).toBe(REPEATED_LOOKUP_NOTE);
    expect(String(blocked?.content)).toContain("repeated external lookup blocked");
  });

  it("a retry interrupted by a kill resumes as that retry: the next empty answer goes to the request without tools", async () => {
    const first = scriptedModel([{}, { hang: true }]);
    const d = await deps(first.provider);
    const running = startTurn(d, { input: turnInput("k1", "do task") });
    await until(() => first.requests.length === 2, 10_000, "the retry's model call");
    await running.stop();
    const record = (await getTurn(d.store, "k1"))!;
    expect([record.state, record.final]).toEqual(["awaiting_model", false]);
    expect((record.snapshot.context as { emptyAnswers?: number }).emptyAnswers).toBe(1);

    const second = scriptedModel([{}, { content: "recovered" }]);
    const result = await startTurn({ ...d, provider: second.provider }, { record }).done;
    expect(result.output.reply).toBe("recovered");
    expect(second.requests.map((r) => r.tools.length > 0)).toEqual([true, false]);
  });

  it("a continuation interrupted by a kill loses no text", async () => {
    const first = scriptedModel([{ content: "Part one, ", finishReason: "length" }, { content: "part two, ", finishReason: "length" }, { hang: true }]);
    const d = await deps(first.provider);
    const running = startTurn(d, { input: turnInput("k2", "write") });
    await until(() => first.requests.length === 3, 10_000, "the second continuation's model call");
    await running.stop();
    const record = (await getTurn(d.store, "k2"))!;
    expect((record.snapshot.context as { continuation?: string[] }).continuation).toEqual(["Part one, ", "part two, "]);

    const second = scriptedModel([{ content: "part three." }]);
    const result = await startTurn({ ...d, provider: second.provider }, { record }).done;
    expect(result.output.reply).toBe("Part one, part two, part three.");
    expect(second.requests[0]?.messages.slice(-4).map((m) => m.role)).toEqual(["assistant", "user", "assistant", "user"]);
    expect(result.output.newMessages).toEqual([{ role: "assistant", content: "Part one, part two, part three." }]);
  });

  it("a record written before retries and continuations existed still resumes", async () => {
    const first = scriptedModel([{ hang: true }]);
    const d = await deps(first.provider);
    const running = startTurn(d, { input: turnInput("old", "hello") });
    await until(() => first.requests.length === 1, 10_000, "the model call");
    await running.stop();
    const record = (await getTurn(d.store, "old"))!;
    const { emptyAnswers: _e, continuation: _c, ...context } = record.snapshot.context as Record<string, unknown>;
    const old = { ...record, snapshot: { ...record.snapshot, context } } as TurnRecord;

    const second = scriptedModel([{}, {}, { content: "hi" }]);
    const result = await startTurn({ ...d, provider: second.provider }, { record: old }).done;
    expect(result.output.reply).toBe("hi");
    expect(second.requests.map((r) => r.tools.length > 0)).toEqual([true, true, false]);
  });

  it("repairs the history before every model call: orphan results dropped, missing ones back-filled", async () => {
    const model = scriptedModel([{ toolCalls: [call("read_file", { path: "a" })] }, { content: "ok" }]);
    const input = turnInput("r1", "go on");
    input.messages.splice(
      1,
      0,
      { role: "tool", tool_call_id: "orphan", content: "stray" },
      { role: "assistant", content: null, tool_calls: [{ id: "lost", type: "function", function: { name: "exec", arguments: "{}" } }] },
    );
    await startTurn(await deps(model.provider), { input }).done;
    for (const request of model.requests) {
      expect(request.messages.some((m) => m.role === "tool" && m.tool_call_id === "orphan")).toBe(false);
      expect(request.messages.find((m) => m.role === "tool" && m.tool_call_id === "lost")?.content).toBe(LOST_TOOL_RESULT);
    }
    expect(model.requests).toHaveLength(2);
  });

  it("sends two user messages in a row as one, as nanobot merges them", async () => {
    const model = scriptedModel([{ content: "ok" }]);
    const input = turnInput("m1", "second");
    input.messages.splice(1, 0, { role: "assistant", content: "earlier" }, { role: "user", content: "unanswered" });
    await startTurn(await deps(model.provider), { input }).done;
    expect(model.requests[0]?.messages.map((m) => m.role)).toEqual(["system", "assistant", "user"]);
    expect(model.requests[0]?.messages.at(-1)?.content).toBe("unanswered\n\nsecond");
  });
});

describe("the message tool and the final reply (nanobot's _sent_in_turn)", () => {
  const messageCall = (id: string, args: Record<string, unknown>) => ({
    role: "assistant" as const,
    content: null,
    tool_calls: [{ id, type: "function" as const, function: { name: "message", arguments: JSON.stringify(args) } }],
  });
  const base = { firstNewIndex: 1, channel: "telegram", chatId: "42", messages: [{ role: "user" as const, content: "hi" }] };
  const withCall = (args: Record<string, unknown>, result = "Message queued for delivery to telegram:42.") => ({
    ...base,
    messages: [...base.messages, messageCall("m", args), { role: "tool" as const, tool_call_id: "m", content: result }],
  });

  it("counts a message to the turn's own chat, by default or named", () => {
    expect(messagedOwnChat(withCall({ content: "hello" }))).toBe(true);
    expect(messagedOwnChat(withCall({ content: "hello", channel: "telegram", chat_id: "42" }))).toBe(true);
  });

  it("does not count another chat, a failed send, or a call before the turn", () => {
    expect(messagedOwnChat(withCall({ content: "hello", chat_id: "7" }))).toBe(false);
    expect(messagedOwnChat(withCall({ content: "hello", channel: "api" }))).toBe(false);
    expect(messagedOwnChat(withCall({ content: "hello" }, "Error: unknown channel"))).toBe(false);
    expect(messagedOwnChat({ ...withCall({ content: "hello" }), firstNewIndex: 3 })).toBe(false);
  });
});
