import { getEventListeners } from "node:events";
import { afterEach, describe, expect, it } from "vitest";
import { createOpenAiProvider, ModelCallError, type ProviderOptions } from "../../src/providers/client.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { until } from "../helpers/wait.js";

/**
 * The caller's signal and a model call: an attempt follows it (through a light abort of its own,
 * not an AbortController per attempt), and leaves nothing on it once over.
 */
const makeProvider = (url: string, stream: boolean, opts: Partial<ProviderOptions> = {}) =>
  createOpenAiProvider(
    { spec: { name: "custom", displayName: "c", defaultApiBase: null, keywords: [] }, apiKey: "k", apiBase: url, extraHeaders: {}, model: "m" },
    { maxTokens: 100, temperature: 0, stream, backoff: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 5000 }, sleep: async () => {}, ...opts },
  );
const ask = { messages: [{ role: "user" as const, content: "hi" }], tools: [] };

describe("a model call and the caller's signal", () => {
  let fake: FakeOpenAi | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  for (const stream of [false, true]) {
    it(`leaves no listener on the caller's signal after calls that answered, failed and were retried (stream=${stream})`, async () => {
      fake = await startFakeOpenAi([{ content: "one" }, { status: 500 }, { content: "two" }, { status: 400 }]);
      const signal = new AbortController().signal;
      const p = makeProvider(fake.url, stream);
      expect((await p.chat({ ...ask, signal })).content).toBe("one");
      expect((await p.chat({ ...ask, signal })).content).toBe("two");
      await expect(p.chat({ ...ask, signal })).rejects.toBeInstanceOf(ModelCallError);
      expect(getEventListeners(signal, "abort")).toHaveLength(0);
    });

    it(`ends a call under way when the caller aborts without a reason, with the AbortError an AbortController gives (stream=${stream})`, async () => {
      fake = await startFakeOpenAi([{ content: "x", stall: "headers" }]);
      const stop = new AbortController();
      const p = makeProvider(fake.url, stream, { idleTimeoutMs: 10_000 }).chat({ ...ask, signal: stop.signal });
      await until(() => fake?.inFlight() === 1, 5_000, "the request to arrive");
      stop.abort();
      const err = await p.catch((e: unknown) => e);
      expect(err).toBe(stop.signal.reason);
      expect((err as DOMException).name).toBe("AbortError");
      expect(fake.requests).toHaveLength(1);
      expect(getEventListeners(stop.signal, "abort")).toHaveLength(0);
    });
  }

  it("sends nothing when the caller's signal is already aborted, failing with its reason", async () => {
    fake = await startFakeOpenAi([{ content: "never" }]);
    const reason = new Error("cancelled before");
    const err = await makeProvider(fake.url, false)
      .chat({ ...ask, signal: AbortSignal.abort(reason) })
      .catch((e: unknown) => e);
    expect(err).toBe(reason);
    expect(fake.requests).toHaveLength(0);
  });
});
