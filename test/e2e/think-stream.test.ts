import { describe, expect, it } from "vitest";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { writeHome } from "../helpers/daemon.js";
import { startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { readSse } from "../../src/server/sse.js";
import { closeAfterEach } from "../helpers/teardown.js";

/**
 * A streamed reply with a think block cut across chunks reaches the user without it, while prose
 * that only mentions the tag keeps it: in what streams to the channel, in the reply, and in what
 * the session stores (the next request's history).
 */
describe("think blocks in a streamed reply", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let gateway: GatewayProcess | undefined;
  closeAfterEach(() => [gateway, fake]);

  const visible = "Sure. The model emits <think> at the start of its reasoning, and `</think>` ends it.";

  async function turn(g: GatewayProcess, content: string) {
    const res = await fetch(`${g.url}/api/sessions/${encodeURIComponent("api:think")}/messages`, {
      method: "POST",
      headers: { ...g.auth, "content-type": "application/json" },
      body: JSON.stringify({ content }),
    });
    expect(res.status).toBe(200);
    let streamed = "";
    for await (const m of readSse(res.body!)) {
      if (m.event === "progress") streamed += (m.data as { delta: string }).delta;
      if (m.event === "reply") return { streamed, reply: (m.data as { content: string }).content };
    }
    throw new Error(`the event stream ended without a reply; gateway output:\n${g.output()}`);
  }

  it("is stripped from what streams, the reply and the session; a tag named in prose survives", async () => {
    fake = await startFakeOpenAi([
      // chunks of 4 characters: "<think>" and "</think>" are both cut in two.
      { content: `<think>The user asks about tags. Secret plan.</think>\n\n${visible}`, chunkSize: 4 },
      { content: "Noted." },
    ]);
    const home = await tempDir();
    await writeHome(home, fake.url, { config: { gateway: { port: 0 } } });
    gateway = await startGateway(home);

    const first = await turn(gateway, "how do think tags work?");
    expect(first.streamed).toBe(visible);
    expect(first.reply).toBe(visible);
    expect(first.streamed).not.toContain("Secret plan");

    await turn(gateway, "thanks");
    const history = fake.requests[1]?.body.messages ?? [];
    const stored = history.find((m) => m.role === "assistant");
    expect(stored?.content).toBe(visible);
  }, 120_000);
});
