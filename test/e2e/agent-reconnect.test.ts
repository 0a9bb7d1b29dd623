import { afterEach, describe, expect, it } from "vitest";
import { readSse } from "../../src/server/sse.js";
import { startFakeOpenAi, type FakeOpenAi, type RecordedRequest } from "../fixtures/fake-openai.js";
import { startSubagentModel } from "../fixtures/subagent-model.js";
import { writeHome } from "../helpers/daemon.js";
import { getJson, startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { spawnPty, type PtySession } from "../helpers/pty.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";

const typed = (req: RecordedRequest) => String(req.body.messages.findLast((m) => m.role === "user")?.content).split("\n").at(-1);
interface Detail {
  messages: Array<{ role: string; content: unknown }>;
}
const said = (d: Detail, role: string) => d.messages.filter((m) => m.role === role).map((m) => String(m.content).split("\n").at(-1));

/** A model whose first answer to "be slow" never comes (the daemon is stopped under it); every later call answers at once. */
async function slowOnceModel() {
  let slow = 0;
  return startFakeOpenAi([], (req) => {
    const text = typed(req);
    if (text === "be slow") return ++slow === 1 ? { content: "too early", delayMs: 60_000 } : { content: "slow answer" };
    return { content: `${text} answer` };
  });
}

describe("the chat survives the daemon (real gateway processes)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  const gateways: GatewayProcess[] = [];
  let pty: PtySession | undefined;
  afterEach(async () => {
    pty?.proc.kill("SIGKILL");
    pty = undefined;
    for (const g of gateways.splice(0)) g.proc.kill("SIGKILL");
    await fake?.close();
  });
  const gateway = async (home: string) => {
    const g = await startGateway(home);
    gateways.push(g);
    return g;
  };

  it("the POST stream says shutting_down before the daemon closes it mid-turn; a retry with the same Idempotency-Key is taken once and answered once", async () => {
    fake = await slowOnceModel();
    const home = await tmp();
    await writeHome(home, fake.url, { config: { gateway: { port: 0 } } });
    const g1 = await gateway(home);
    const post = async (g: GatewayProcess, key: string) => {
      const res = await fetch(`${g.url}/api/sessions/api:chat/messages`, { method: "POST", headers: { ...g.auth, "content-type": "application/json", "idempotency-key": key }, body: JSON.stringify({ content: "be slow" }) });
      const events: Array<{ event: string; data: Record<string, unknown> }> = [];
      if (!res.ok) return { status: res.status, events, body: (await res.json()) as { error: string } };
      for await (const m of readSse(res.body!)) events.push({ event: m.event, data: m.data as Record<string, unknown> });
      return { status: res.status, events };
    };
    const first = post(g1, "msg-1");
    await until(() => fake!.requests.length >= 1, 30_000, "the model call");
    g1.proc.kill("SIGTERM");
    const cut = await first;
    expect(cut.events.map((e) => e.event)).toEqual(["accepted", "turn_state", "shutting_down"]);
    expect(cut.events[0]!.data.id).toBe("api:msg-1");
    expect((await g1.exited).code).toBe(0);

    const g2 = await gateway(home);
    const again = await post(g2, "msg-1");
    expect(again.events.at(0)).toMatchObject({ event: "accepted", data: { id: "api:msg-1" } });
    expect(again.events.at(-1)).toMatchObject({ event: "reply", data: { content: "slow answer", answers: ["api:msg-1"] } });
    // Once more after the answer: it comes from the mailbox; nothing is asked of the model again.
    const third = await post(g2, "msg-1");
    expect(third.events.map((e) => e.event)).toEqual(["accepted", "reply"]);
    expect(third.events[1]!.data.content).toBe("slow answer");
    expect(fake.requests.filter((r) => typed(r) === "be slow")).toHaveLength(2);
    const detail = await getJson<Detail>(g2, "/api/sessions/api:chat");
    expect(said(detail, "user")).toEqual(["be slow"]);
    expect(said(detail, "assistant")).toEqual(["slow answer"]);

    // The session's event stream first catches up from the mailbox (?since), then says it is ready.
    const res = await fetch(`${g2.url}/api/sessions/api:chat/events?since=0`, { headers: g2.auth });
    const caughtUp: Array<{ event: string; data: Record<string, unknown> }> = [];
    for await (const m of readSse(res.body!)) {
      caughtUp.push({ event: m.event, data: m.data as Record<string, unknown> });
      if (m.event === "ready") break;
    }
    expect(caughtUp.map((e) => [e.event, e.data.content, e.data.answers])).toEqual([
      ["message", "slow answer", ["api:msg-1"]],
      ["ready", undefined, undefined],
    ]);
    const malformed = await fetch(`${g2.url}/api/sessions/api:chat/events?since=yesterday`, { headers: g2.auth });
    expect(malformed.status).toBe(400);

    const bad = await post(g2, "not a key");
    expect(bad.status).toBe(400);
    expect(bad.body?.error).toMatch(/Idempotency-Key must be/);
  }, 180_000);

  it("interactive troupe agent waits for a restarted daemon, reconnects saying so, and sends what was typed meanwhile; nothing is lost or answered twice", async () => {
    fake = await slowOnceModel();
    const home = await tmp();
    await writeHome(home, fake.url, { config: { gateway: { port: 0 } } });
    const g1 = await gateway(home);
    pty = spawnPty("agent", { TROUPE_HOME: home });
    await pty.waitFor(`daemon pid ${g1.proc.pid}`);
    await pty.waitFor("you> ");
    pty.type("be slow\r");
    await until(() => fake!.requests.length >= 1, 30_000, "the model call");
    g1.proc.kill("SIGTERM");
    await pty.waitFor(/the daemon (went away|is stopping); waiting for it to come back/);
    expect((await g1.exited).code).toBe(0);
    pty.type("meanwhile\r");

    const g2 = await gateway(home);
    await pty.waitFor(`reconnected to the daemon, pid ${g2.proc.pid}`);
    await pty.waitFor("slow answer");
    await pty.waitFor("meanwhile answer");
    await pty.waitFor("you> ");
    pty.type("\x04");
    expect(await pty.exited).toBe(0);
    expect(pty.screen()).not.toContain("too early");
    expect(pty.screen()).not.toContain("error:");
    const detail = await getJson<Detail>(g2, "/api/sessions/cli:direct");
    expect(said(detail, "user")).toEqual(["be slow", "meanwhile"]);
    expect(said(detail, "assistant")).toEqual(["slow answer", "meanwhile answer"]);
    expect(fake.requests.map(typed)).toEqual(["be slow", "be slow", "meanwhile"]);
  }, 180_000);

  it("a subagent's report for the chat appears at the prompt as it arrives, with nothing typed", async () => {
    const model = await startSubagentModel({ subagentMs: 1_500 });
    fake = model.fake;
    const home = await tmp();
    await writeHome(home, fake.url, { config: { gateway: { port: 0 } } });
    const g = await gateway(home);
    pty = spawnPty("agent", { TROUPE_HOME: home });
    await pty.waitFor(`daemon pid ${g.proc.pid}`);
    await pty.waitFor("you> ");
    pty.type("please spawn 1\r");
    await pty.waitFor("Started 1.");
    await pty.waitFor("you> ");
    await pty.waitFor("Summary: report on t1");
    pty.type("\x04");
    expect(await pty.exited).toBe(0);
    expect(pty.screen().split("Summary: report on t1")).toHaveLength(2);
  }, 180_000);
});
