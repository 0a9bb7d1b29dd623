import { describe, expect, it } from "vitest";
import { createWatchdog, type Limited } from "../../src/providers/watchdog.js";
import { malformed } from "../../src/providers/wire.js";
import { modelResponseSchema, type ModelResponse } from "../../src/providers/messages.js";

/** A watched call that records which limits ran out, and when. */
function call(idleMs: number, deadlineIn = Infinity) {
  const expired: Array<{ limit: string; after: number }> = [];
  const start = Date.now();
  const c: Limited & { expired: typeof expired } = {
    heardAt: start,
    idleMs,
    deadline: start + deadlineIn,
    expired,
    expire: (limit) => expired.push({ limit, after: Date.now() - start }),
  };
  return c;
}

const until = async (cond: () => boolean, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe("the watchdog of a provider's calls (one timer for all of them)", () => {
  it("ends a silent call after its idle limit, never before, and once; a call heard from meanwhile runs on", async () => {
    const dog = createWatchdog();
    const silent = call(150);
    const heard = call(150);
    dog.watch(silent);
    dog.watch(heard);
    const keepTalking = setInterval(() => (heard.heardAt = Date.now()), 20);
    await until(() => silent.expired.length > 0);
    await new Promise((r) => setTimeout(r, 300));
    clearInterval(keepTalking);
    dog.unwatch(heard);
    expect(silent.expired).toHaveLength(1);
    expect(silent.expired[0]!.limit).toBe("idle");
    expect(silent.expired[0]!.after).toBeGreaterThanOrEqual(150);
    expect(heard.expired).toEqual([]);
  });

  it("ends a call at its deadline however much it hears; the earlier limit acts first when both ran out", async () => {
    const dog = createWatchdog();
    const busy = call(200, 250);
    dog.watch(busy);
    const keepTalking = setInterval(() => (busy.heardAt = Date.now()), 20);
    await until(() => busy.expired.length > 0);
    clearInterval(keepTalking);
    expect(busy.expired.map((e) => e.limit)).toEqual(["deadline"]);
    expect(busy.expired[0]!.after).toBeGreaterThanOrEqual(250);
    // Both past due when the timer gets to it (the event loop was blocked): the idle limit ran out first.
    const both = call(50, 120);
    dog.watch(both);
    const end = Date.now() + 200;
    while (Date.now() < end); // block the loop past both limits
    await until(() => both.expired.length === 2);
    expect(both.expired.map((e) => e.limit)).toEqual(["idle", "deadline"]);
  });

  it("watches a call added after the timer was armed for a later one, and a call no longer watched is left alone", async () => {
    const dog = createWatchdog();
    const late = call(5_000);
    dog.watch(late);
    const early = call(100);
    dog.watch(early);
    const gone = call(100);
    dog.watch(gone);
    dog.unwatch(gone);
    await until(() => early.expired.length > 0);
    await new Promise((r) => setTimeout(r, 150));
    expect(early.expired[0]!.after).toBeGreaterThanOrEqual(100);
    expect(gone.expired).toEqual([]);
    expect(late.expired).toEqual([]);
    dog.unwatch(late);
  });
});

describe("the check of a model response (modelResponseSchema's, by hand)", () => {
  const good: ModelResponse = {
    content: "hi",
    toolCalls: [{ id: "c1", name: "list_dir", rawArguments: "{}", arguments: {} }],
    finishReason: "stop",
    usage: { promptTokens: 1, completionTokens: 2, totalTokens: 3 },
  };
  const bad: Array<Record<string, unknown>> = [
    { content: null },
    { content: 3 },
    { reasoningContent: 1 },
    { finishReason: 2 },
    { usage: { promptTokens: -1, completionTokens: 0, totalTokens: 0 } },
    { usage: { promptTokens: 1.5, completionTokens: 0, totalTokens: 0 } },
    { usage: { promptTokens: 2 ** 60, completionTokens: 0, totalTokens: 0 } },
    { usage: null },
    { toolCalls: null },
    { toolCalls: [{ id: 1, name: "x", rawArguments: "", arguments: null }] },
    { toolCalls: [{ id: "a", name: "x", rawArguments: "", arguments: [] }] },
    { toolCalls: [{ id: "a", name: "x", rawArguments: "", arguments: "{}" }] },
    { toolCalls: [{ id: "a", name: "x", rawArguments: "", arguments: null, argumentsError: 5 }] },
  ];
  it("accepts what the schema accepts and refuses what it refuses, naming the field", () => {
    expect(malformed(good)).toBeUndefined();
    expect(modelResponseSchema.safeParse(good).success).toBe(true);
    expect(malformed({ ...good, toolCalls: [], finishReason: null, reasoningContent: "r", model: "p/m" })).toBeUndefined();
    for (const change of bad) {
      const r = { ...good, ...change } as ModelResponse;
      expect(modelResponseSchema.safeParse(r).success, JSON.stringify(change)).toBe(false);
      expect(malformed(r), JSON.stringify(change)).toMatch(new RegExp(`^${Object.keys(change)[0]}`));
    }
  });
});
