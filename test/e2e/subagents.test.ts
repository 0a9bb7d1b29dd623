import { describe, expect, it } from "vitest";
import { isSubagentRequest, startSubagentModel } from "../fixtures/subagent-model.js";
import type { FakeOpenAi } from "../fixtures/fake-openai.js";
import { runCli } from "../helpers/cli.js";
import { writeHome } from "../helpers/daemon.js";
import { getJson, postMessage, startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { sleep, until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";

interface Node {
  id: string;
  kind: string;
  state: string;
  children: Node[];
}
interface Reply {
  content: string;
  answers: string[];
}

describe("subagents across kill -9 (real gateway processes)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let gateway: GatewayProcess | undefined;
  closeAfterEach(() => [gateway, fake]);

  it("shows subagents under their session, and after a kill -9 mid-work they finish and are announced once", async () => {
    const model = await startSubagentModel({ subagentMs: 1_500 });
    fake = model.fake;
    const home = await tmp();
    await writeHome(home, fake.url, { config: { gateway: { port: 0 } } });
    gateway = await startGateway(home);
    const g1 = gateway;
    postMessage(g1, "api:k", "please spawn 2");
    await until(async () => ((await getJson<{ replies: Reply[] }>(g1, "/api/sessions/api:k/replies")).replies.length ? true : undefined));
    await until(async () => (fake!.inFlight() >= 2 ? true : undefined));

    const { root } = await getJson<{ root: Node }>(g1, "/api/actors");
    const session = root.children.find((c) => c.id === "session:api:k");
    const subs = session?.children.filter((c) => c.kind === "subagent") ?? [];
    expect(subs).toHaveLength(2);
    expect(subs.map((s) => [/^subagent:sa-[0-9a-f]{10}$/.test(s.id), s.state])).toEqual([[true, "awaiting_model"], [true, "awaiting_model"]]);

    g1.proc.kill("SIGKILL");
    await g1.exited;
    const before = fake.requests.filter(isSubagentRequest).length;

    gateway = await startGateway(home);
    const g2 = gateway;
    const ids = subs.map((s) => `${s.id}:result`);
    const replies = await until(async () => {
      const r = (await getJson<{ replies: Reply[] }>(g2, "/api/sessions/api:k/replies")).replies;
      return ids.every((id) => r.some((x) => x.answers.includes(id))) ? r : undefined;
    });
    await sleep(500);
    const final = (await getJson<{ replies: Reply[] }>(g2, "/api/sessions/api:k/replies")).replies;
    expect(final).toHaveLength(replies.length);
    expect(final[0]?.content).toBe("Started 2.");
    for (const id of ids) expect(final.flatMap((r) => r.answers).filter((a) => a === id)).toHaveLength(1);
    // The interrupted model calls were issued again after the restart.
    expect(fake.requests.filter(isSubagentRequest).length).toBe(before + 2);

    const show = await runCli(["sessions", "show", "api:k"], { TROUPE_HOME: home });
    expect(show.stdout).toMatch(/subagents \(troupe sessions show subagent:<id> for a transcript\):\n {2}sa-[0-9a-f]{10} {2}\S+ \S+ {2}responded {2}job \d\n {2}sa-[0-9a-f]{10} {2}\S+ \S+ {2}responded {2}job \d\n$/);
    const sub = await runCli(["sessions", "show", subs[0]!.id], { TROUPE_HOME: home });
    expect(sub.stdout).toMatch(/ {2}user: t\d\n {2}assistant: report on t\d/);
    expect(sub.stdout).toMatch(/responded \(resumed 1×\)/);
  });
});
