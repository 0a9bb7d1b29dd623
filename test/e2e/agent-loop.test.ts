import { afterEach, describe, expect, it } from "vitest";
import { EMPTY_FINAL_RESPONSE_MESSAGE, FINALIZATION_RETRY_PROMPT } from "../../src/context/loop-texts.js";
import { REPEATED_LOOKUP_NOTE } from "../../src/tools/repeated-lookup.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { startFakeTelegram, type FakeTelegram } from "../fixtures/fake-telegram.js";
import { startFakeWeb, type FakeWeb } from "../fixtures/fake-web.js";
import { runCli } from "../helpers/cli.js";
import { writeHome, writeTelegramHome } from "../helpers/daemon.js";
import { startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";

const TOKEN = "123:LOOP";

/** The agent loop's recoveries as nanobot has them, through the real CLI and gateway against the fake model. */
describe("the agent loop's recoveries (real processes, fake model)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let tg: FakeTelegram | undefined;
  let web: FakeWeb | undefined;
  let gateway: GatewayProcess | undefined;
  afterEach(async () => {
    gateway?.proc.kill("SIGTERM");
    await gateway?.exited;
    gateway = undefined;
    await Promise.all([fake?.close(), tg?.close(), web?.close()]);
    fake = tg = web = undefined;
  });

  it("an empty answer is asked for again, then once without tools, then replaced by a clear fallback", async () => {
    fake = await startFakeOpenAi([{}, { content: "  " }, {}, { content: "Answered now." }]);
    const home = await tmp();
    await writeHome(home, fake.url);
    const r = await runCli(["agent", "-m", "do the task"], { TROUPE_HOME: home });
    expect([r.code, r.stderr]).toEqual([0, ""]);
    expect(r.stdout).toBe(`${EMPTY_FINAL_RESPONSE_MESSAGE}\n`);
    expect(fake.requests).toHaveLength(3);
    expect(fake.requests.map((q) => (q.body.tools ?? []).length > 0)).toEqual([true, true, false]);
    expect(String(fake.requests[2]?.body.messages.at(-1)?.content)).toMatch(new RegExp(`do the task\\n\\n${FINALIZATION_RETRY_PROMPT}$`));

    // The next turn's history holds the fallback, never the finalization prompt.
    const next = await runCli(["agent", "-m", "again"], { TROUPE_HOME: home });
    expect(next.stdout).toBe("Answered now.\n");
    const history = fake.requests[3]?.body.messages.slice(1, -1).map((m) => [m.role, m.content]);
    expect(history).toEqual([
      ["user", "do the task"],
      ["assistant", EMPTY_FINAL_RESPONSE_MESSAGE],
    ]);
  }, 60_000);

  it('an answer cut off at the token limit (finish_reason "length") is continued and comes back whole', async () => {
    fake = await startFakeOpenAi([
      { content: "Chapter one: the quick brown fox ", finishReason: "length" },
      { content: "jumps over the lazy dog, ", finishReason: "length" },
      { content: "and the end." },
      { content: "Noted." },
    ]);
    const home = await tmp();
    await writeHome(home, fake.url);
    const r = await runCli(["agent", "-m", "tell the story"], { TROUPE_HOME: home });
    expect([r.code, r.stderr]).toEqual([0, ""]);
    expect(r.stdout).toBe("Chapter one: the quick brown fox jumps over the lazy dog, and the end.\n");
    expect(fake.requests).toHaveLength(3);
    const continued = fake.requests[1]?.body.messages.slice(-2);
    expect(continued?.[0]).toMatchObject({ role: "assistant", content: "Chapter one: the quick brown fox " });
    expect(String(continued?.[1]?.content)).toContain("The previous assistant response was cut off.");

    // The session keeps the answer as one message.
    await runCli(["agent", "-m", "thanks"], { TROUPE_HOME: home });
    expect(fake.requests[3]?.body.messages.slice(1, -1).map((m) => [m.role, m.content])).toEqual([
      ["user", "tell the story"],
      ["assistant", "Chapter one: the quick brown fox jumps over the lazy dog, and the end."],
    ]);
  }, 60_000);

  it("the same web_fetch URL a third time in a turn is answered with a note, without a request", async () => {
    web = await startFakeWeb({ "/page": (_req, res) => res.writeHead(200, { "content-type": "text/plain" }).end("the page text") });
    const url = `${web.origin}/page`;
    fake = await startFakeOpenAi([
      { toolCalls: [{ id: "f1", name: "web_fetch", arguments: { url } }] },
      { toolCalls: [{ id: "f2", name: "web_fetch", arguments: { url } }] },
      { toolCalls: [{ id: "f3", name: "web_fetch", arguments: { url } }] },
      { content: "Done reading." },
    ]);
    const home = await tmp();
    await writeHome(home, fake.url, { config: { tools: { ssrfWhitelist: ["127.0.0.1/32"] } } });
    const r = await runCli(["agent", "-m", "read the page"], { TROUPE_HOME: home });
    expect([r.code, r.stderr]).toEqual([0, ""]);
    expect(r.stdout).toBe("Done reading.\n");
    expect(web.hits).toEqual(["/page", "/page"]);
    const results = (fake.requests[3]?.body.messages ?? []).filter((m) => m.role === "tool");
    expect(results.map((m) => m.tool_call_id)).toEqual(["f1", "f2", "f3"]);
    expect(String(results[0]?.content)).toContain("the page text");
    expect(results[2]?.content).toBe(REPEATED_LOOKUP_NOTE);
  }, 60_000);

  it("when the message tool already wrote to the chat, the final reply is not sent again (Telegram)", async () => {
    fake = await startFakeOpenAi([], (req) => {
      const last = req.body.messages.at(-1);
      const text = String(last?.content);
      if (last?.role === "tool") return { content: "I sent you the answer above." };
      if (text.endsWith("what is 6 x 7?")) return { toolCalls: [{ name: "message", arguments: { content: "It is 42." } }] };
      if (text.endsWith("and for bob?")) return { toolCalls: [{ name: "message", arguments: { content: "Hi Bob", chat_id: "77" } }] };
      return { content: "pong" };
    });
    tg = await startFakeTelegram(TOKEN);
    const home = await tmp();
    await writeTelegramHome(home, fake.url, tg);
    gateway = await startGateway(home);
    const t = tg;

    t.message("what is 6 x 7?");
    await until(() => t.sent().some((s) => s.text === "It is 42."), 30_000, "the message tool's send");
    // A chat delivers in order: once the next reply is out, a reply of the first turn would have been too.
    t.message("ping");
    await until(() => t.sent().some((s) => s.text === "pong"), 30_000, "the reply to ping");
    expect(t.sent().map((s) => [s.chat_id, s.text])).toEqual([
      ["42", "It is 42."],
      ["42", "pong"],
    ]);

    // A message to another chat does not count: the reply comes as usual.
    t.message("and for bob?");
    await until(() => t.sent().some((s) => s.text === "I sent you the answer above." && String(s.chat_id) === "42"), 30_000, "the reply after messaging another chat");
    expect(t.sent().slice(2).map((s) => [s.chat_id, s.text])).toEqual([
      ["77", "Hi Bob"],
      ["42", "I sent you the answer above."],
    ]);
  }, 90_000);

  it("through the daemon's control API: the reply is marked alreadySent, and troupe agent prints the message once", async () => {
    fake = await startFakeOpenAi([], (req) => {
      const last = req.body.messages.at(-1);
      if (last?.role === "tool") return { content: "I sent you the answer above." };
      return String(last?.content).endsWith("what is 6 x 7?") ? { toolCalls: [{ name: "message", arguments: { content: "It is 42." } }] } : { content: "pong" };
    });
    const home = await tmp();
    await writeHome(home, fake.url, { config: { gateway: { port: 0 } } });
    gateway = await startGateway(home);
    const r = await runCli(["agent", "-m", "what is 6 x 7?", "--no-markdown"], { TROUPE_HOME: home });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("It is 42.\n");
    // Without the message tool, the reply is printed as always.
    const next = await runCli(["agent", "-m", "ping", "--no-markdown"], { TROUPE_HOME: home });
    expect(next.stdout).toBe("pong\n");
  }, 90_000);

  it.each([
    {
      what: "an empty-answer retry",
      first: {},
      second: {},
      reply: "Recovered answer.",
      // The retry is re-issued with tools; the empty answer after it leads to the request without them.
      tools: [true, true, false],
    },
    {
      what: "a length continuation",
      first: { content: "Part one, ", finishReason: "length" },
      second: { content: "part two." },
      reply: "Part one, part two.",
      tools: [true, true],
    },
  ])("killed -9 during $what, the daemon resumes it: one reply, nothing lost", async ({ first, second, reply, tools }) => {
    const script = [first, second, { content: "Recovered answer." }];
    fake = await startFakeOpenAi([], (req, index) => (String(req.body.messages.at(-1)?.content).endsWith("ping") ? { content: "pong" } : script[index]));
    tg = await startFakeTelegram(TOKEN);
    const home = await tmp();
    await writeTelegramHome(home, fake.url, tg);
    // The second model call of the turn (the retry or the continuation) dies before it is sent.
    gateway = await startGateway(home, { TROUPE_FAULT: "awaiting-model:2" });
    tg.message("answer me");
    expect((await gateway.exited).signal).toBe("SIGKILL");
    expect(fake.requests).toHaveLength(1);

    gateway = await startGateway(home);
    const t = tg;
    await until(() => t.sent().some((s) => s.text === reply), 30_000, "the resumed turn's reply");
    t.message("ping");
    await until(() => fake!.requests.length === tools.length + 1 && t.sent().length === 2, 30_000, "the reply to the next message");
    expect(t.sent().map((s) => s.text)).toEqual([reply, "pong"]);
    expect(fake.requests.slice(0, tools.length).map((q) => (q.body.tools ?? []).length > 0)).toEqual(tools);
  }, 120_000);
});
