import { afterEach, describe, expect, it } from "vitest";
import { appendMessagesOps, newSessionMeta } from "../../src/store/sessions.js";
import { openStore } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi, type FakeStep } from "../fixtures/fake-openai.js";
import { runCli } from "../helpers/cli.js";
import { writeHome } from "../helpers/daemon.js";
import { getJson, startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";

interface Listing {
  sessions: Array<{ key: string; turns: number; usage: { promptTokens: number; completionTokens: number; totalTokens: number } }>;
  corrupt?: Array<{ sublevel: string; key: string; problem: string }>;
}

/** A reply as a sloppy server sends it, streamed or whole: fractional, string and negative counts. */
function oddReply(message: Record<string, unknown>, delta: Record<string, unknown>): FakeStep {
  const usage = { prompt_tokens: 10.7, completion_tokens: "3", total_tokens: -1 };
  return {
    raw: { id: "x", object: "chat.completion", choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", ...message } }], usage },
    rawChunks: [{ id: "x", choices: [{ index: 0, delta, finish_reason: "stop" }] }, { id: "x", choices: [], usage }],
  };
}

describe("bad input never breaks what is stored (real gateway over loopback)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let gateway: GatewayProcess | undefined;
  afterEach(async () => {
    gateway?.proc.kill("SIGTERM");
    await gateway?.exited;
    gateway = undefined;
    await fake?.close();
  });

  it("odd token counts and a numeric tool-call id from the model leave a session that lists and shows", async () => {
    const call = { id: 7, type: "function", function: { name: "list_dir", arguments: { path: "." } } };
    fake = await startFakeOpenAi([
      oddReply({ content: null, tool_calls: [call] }, { tool_calls: [{ index: 0, ...call }] }),
      oddReply({ content: "Listed it." }, { content: "Listed it." }),
    ]);
    const home = await tmp();
    await writeHome(home, fake.url, { config: { gateway: { port: 0 } } });
    gateway = await startGateway(home);
    const g = gateway;
    const res = await fetch(`${g.url}/api/sessions/api%3Aodd/messages`, { method: "POST", headers: { ...g.auth, "content-type": "application/json" }, body: JSON.stringify({ content: "list it" }) });
    expect(await res.text()).toMatch(/event: reply\ndata: .*Listed it\./);

    const listing = await until(async () => {
      const l = await getJson<Listing>(g, "/api/sessions");
      return l.sessions.find((s) => s.key === "api:odd" && s.turns === 1) && l;
    }, 20_000, "the finished turn in the listing");
    // 10.7 → 10, "3" → 3, a negative total → the sum; twice (two model calls).
    expect(listing.sessions.find((s) => s.key === "api:odd")?.usage).toEqual({ promptTokens: 20, completionTokens: 6, totalTokens: 26 });
    expect(listing.corrupt).toEqual([]);
    const list = await runCli(["sessions", "list"], { TROUPE_HOME: home });
    expect([list.code, list.stderr]).toEqual([0, ""]);
    expect(list.stdout).toMatch(/^api:odd\s+1\s+26\s/m);
    const show = await runCli(["sessions", "show", "api:odd"], { TROUPE_HOME: home });
    expect(show.code).toBe(0);
    expect(show.stdout).toContain("assistant → list_dir(");
  }, 60_000);

  it("a corrupt record is skipped and named: the API answers 200, the CLI warns, with a daemon and without", async () => {
    const home = await tmp();
    fake = await startFakeOpenAi();
    await writeHome(home, fake.url, { config: { gateway: { port: 0 } } });
    const store = await openStore(`${home}/store`);
    const good = appendMessagesOps(newSessionMeta("api:good", 1), [{ role: "user", content: "hi" }], "t1", 2, { promptTokens: 1, completionTokens: 2, totalTokens: 3 }, true);
    const bad = { ...newSessionMeta("api:bad", 1), usage: { promptTokens: 2.5, completionTokens: 0, totalTokens: 2.5 } };
    await store.batch([...good.ops, { type: "put", sublevel: "sessions", key: "meta:api:bad", value: bad }], { sync: true });
    await store.close();
    const warning = /^warning: skipped corrupt record sessions\/meta:api:bad \(usage\.promptTokens: .*\)$/m;

    gateway = await startGateway(home);
    const res = await fetch(`${gateway.url}/api/sessions`, { headers: gateway.auth });
    expect(res.status).toBe(200);
    const listing = (await res.json()) as Listing;
    expect(listing.sessions.map((s) => s.key)).toEqual(["api:good"]);
    expect(listing.corrupt?.map((c) => `${c.sublevel}/${c.key}`)).toEqual(["sessions/meta:api:bad"]);
    const viaDaemon = await runCli(["sessions", "list"], { TROUPE_HOME: home });
    expect(viaDaemon.code).toBe(0);
    expect(viaDaemon.stdout).toMatch(/^api:good\s+1\s+3\s/m);
    expect(viaDaemon.stderr).toMatch(warning);

    gateway.proc.kill("SIGTERM");
    expect((await gateway.exited).code).toBe(0);
    gateway = undefined;
    const direct = await runCli(["sessions", "list"], { TROUPE_HOME: home });
    expect(direct.code).toBe(0);
    expect(direct.stdout).toMatch(/^api:good\s+1\s+3\s/m);
    expect(direct.stderr).toMatch(warning);
  }, 60_000);
});
