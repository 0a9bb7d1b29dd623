import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createOpenAiProvider } from "../../src/providers/client.js";

/**
 * A streamed reply read straight from its chunks into the SSE parser (chat-http.ts): the events
 * before one that ends the reply (an error event, a malformed one) still reach the caller first,
 * in order, in one chunk or split anywhere.
 */
const chunk = (content: string) => `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;

async function serve(body: string, splitAt?: number): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      if (splitAt === undefined) res.end(body);
      else {
        res.write(body.slice(0, splitAt));
        setTimeout(() => res.end(body.slice(splitAt)), 20);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, server };
}

const provider = (url: string) =>
  createOpenAiProvider(
    { spec: { name: "custom", displayName: "c", defaultApiBase: null, keywords: [] }, apiKey: "k", apiBase: url, extraHeaders: {}, model: "m" },
    { maxTokens: 100, temperature: 0, stream: true, backoff: { maxRetries: 0, baseDelayMs: 1, maxDelayMs: 1 }, sleep: async () => {} },
  );

describe("a streamed reply's events", () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  const endings: Array<[string, string, RegExp]> = [
    ["an error event", `data: ${JSON.stringify({ error: { message: "overloaded mid-stream" } })}\n\n`, /overloaded mid-stream/],
    ["a malformed event", "data: {not json\n\n", /JSON|Unexpected|token/i],
  ];
  for (const [what, ending, message] of endings) {
    for (const split of [undefined, 5, chunk("one ").length + 3]) {
      it(`pass on the text before ${what}, then fail the call (${split === undefined ? "one chunk" : `split at ${split}`})`, async () => {
        const body = chunk("one ") + chunk("two") + ending + chunk("never");
        const s = await serve(body, split);
        server = s.server;
        const deltas: string[] = [];
        const err = await provider(s.url)
          .chat({ messages: [{ role: "user", content: "hi" }], tools: [], onDelta: (d) => deltas.push(d) })
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(Error);
        expect((err as Error).message).toMatch(message);
        expect(deltas.join("")).toBe("one two");
      });
    }
  }

  it("reads to the end after [DONE], in order, whatever the chunks", async () => {
    const body = chunk("a") + chunk("b") + "data: [DONE]\n\n" + chunk("after done");
    for (const split of [undefined, 1, 7, body.length - 3]) {
      const s = await serve(body, split);
      const deltas: string[] = [];
      const reply = await provider(s.url).chat({ messages: [{ role: "user", content: "hi" }], tools: [], onDelta: (d) => deltas.push(d) });
      await new Promise<void>((resolve) => s.server.close(() => resolve()));
      expect(reply.content).toBe("ab");
      expect(deltas.join("")).toBe("ab");
    }
  });
});
