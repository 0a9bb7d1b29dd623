import { describe, expect, it } from "vitest";
import { readSse } from "../../src/server/sse.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { runCli } from "../helpers/cli.js";
import { writeHome } from "../helpers/daemon.js";
import { startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";

/** POSTs a message to the control API and reads its event stream up to the reply. */
async function ask(g: GatewayProcess, key: string, content: string): Promise<string> {
  const res = await fetch(`${g.url}/api/sessions/${encodeURIComponent(key)}/messages`, { method: "POST", headers: { ...g.auth, "content-type": "application/json" }, body: JSON.stringify({ content }) });
  for await (const m of readSse(res.body!)) if (m.event === "reply") return (m.data as { content: string }).content;
  throw new Error(`no reply to ${content}`);
}

/** The text of the last user message the model got (after its runtime-context header). */
const lastUser = (body: { messages: Array<{ role: string; content: unknown }> }) => String(body.messages.filter((m) => m.role === "user").at(-1)?.content).split("\n\n").at(-1);

describe("sessions delete and sessions show --all", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let gateway: GatewayProcess | undefined;
  closeAfterEach(() => [gateway, fake]);

  it("prints stored chat text and cron names with their control characters escaped, so a message cannot drive the terminal", async () => {
    // A Telegram user (or a page the model read) sends an OSC title change and a clear screen.
    const attack = "hi\x1b]0;PWNED\x07\x1b[2J\rback\x9b2J\x7f";
    // (sessions show puts a message on one line, its \r a space; the rest is as sent)
    const escaped = "hi\\x1b]0;PWNED\\x07\\x1b[2J";
    fake = await startFakeOpenAi([], (req) => ({ content: `answer to ${lastUser(req.body)}` }));
    const home = await tmp();
    await writeHome(home, fake.url);
    const env = { TROUPE_HOME: home };
    const asked = await runCli(["agent", "-m", attack, "--no-markdown"], env);
    expect(asked.stdout).toContain(`answer to ${escaped}`);
    const shown = await runCli(["sessions", "show", "cli:direct"], env);
    expect(shown.stdout).toContain(`user: ${escaped}`);
    expect(shown.stdout).toContain(`assistant: answer to ${escaped}`);
    expect((await runCli(["cron", "add", "--name", attack, "--message", attack, "--every", "3600"], env)).code).toBe(0);
    const listed = await runCli(["cron", "list"], env);
    expect(listed.stdout).toContain(escaped);
    // Nothing but newlines is a control character in what the CLI printed.
    // eslint-disable-next-line no-control-regex
    for (const out of [asked.stdout, asked.stderr, shown.stdout, listed.stdout]) expect(out).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
  });

  it("without a daemon: show --all lists the epochs before /new; delete removes the session from the store", async () => {
    fake = await startFakeOpenAi([], (req) => ({ content: `answer to ${lastUser(req.body)}` }));
    const home = await tmp();
    await writeHome(home, fake.url);
    const env = { TROUPE_HOME: home };
    expect((await runCli(["agent", "-m", "first question"], env)).stdout).toContain("answer to first question");
    expect((await runCli(["agent", "-m", "/new"], env)).code).toBe(0);
    expect((await runCli(["agent", "-m", "second question"], env)).stdout).toContain("answer to second question");

    const current = await runCli(["sessions", "show", "cli:direct"], env);
    expect(current.stdout).toContain("user: second question");
    expect(current.stdout).not.toContain("first question");
    const all = await runCli(["sessions", "show", "cli:direct", "--all"], env);
    expect(all.code).toBe(0);
    const epoch0 = all.stdout.indexOf("epoch 0 (before /new)");
    const epoch1 = all.stdout.indexOf("epoch 1 (current)");
    expect(epoch0).toBeGreaterThan(0);
    expect(epoch1).toBeGreaterThan(epoch0);
    expect(all.stdout.slice(epoch0, epoch1)).toContain("user: first question");
    expect(all.stdout.slice(epoch1)).toContain("user: second question");

    const del = await runCli(["sessions", "delete", "cli:direct"], env);
    expect(del.stderr).toBe("");
    expect(del.code).toBe(0);
    expect(del.stdout).toMatch(/^deleted session cli:direct: 4 message\(s\), 2 turn\(s\)/);
    const gone = await runCli(["sessions", "show", "cli:direct"], env);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain("no session cli:direct");
    expect((await runCli(["sessions", "list"], env)).stdout).toBe("no sessions yet\n");
    const again = await runCli(["sessions", "delete", "cli:direct"], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("no session cli:direct");
  });

  it("with a daemon: delete goes through DELETE /api/sessions/:key, which refuses while a turn of the session runs", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    fake = await startFakeOpenAi([], async (req) => {
      const text = lastUser(req.body);
      if (text === "take your time") await gate;
      return { content: `answer to ${text}` };
    });
    const home = await tmp();
    await writeHome(home, fake.url, { config: { gateway: { port: 0 } } });
    gateway = await startGateway(home);
    const g = gateway;
    const env = { TROUPE_HOME: home };
    const del = (key: string, auth = g.auth) => fetch(`${g.url}/api/sessions/${encodeURIComponent(key)}`, { method: "DELETE", headers: auth });

    expect(await ask(g, "api:x", "hello")).toBe("answer to hello");
    await ask(g, "api:x", "/new");
    expect(await ask(g, "api:x", "again")).toBe("answer to again");
    const all = await runCli(["sessions", "show", "api:x", "--all"], env);
    expect(all.stdout).toMatch(/epoch 0 \(before \/new\):\n(.*\n)* {2}user: hello\n/);
    expect(all.stdout).toMatch(/epoch 1 \(current\):\n(.*\n)* {2}user: again\n/);

    // A turn of api:y is waiting for the model.
    const slow = ask(g, "api:y", "take your time");
    await until(() => fake!.requests.some((r) => lastUser(r.body) === "take your time"), 30_000, "the slow turn's model call");
    expect((await del("api:y", {})).status).toBe(401);
    const busy = await del("api:y");
    expect(busy.status).toBe(409);
    expect(((await busy.json()) as { error: string }).error).toMatch(/a turn of session api:y is running/);
    const refused = await runCli(["sessions", "delete", "api:y"], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/a turn of session api:y is running; \/stop it or wait for it to finish/);
    expect((await del("api:nobody")).status).toBe(404);

    // Through the daemon (it holds the store, so nothing else could have done it).
    const cli = await runCli(["sessions", "delete", "api:x"], env);
    expect(cli.stderr).toBe("");
    expect(cli.stdout).toMatch(/^deleted session api:x: 4 message\(s\), 2 turn\(s\)/);
    expect((await fetch(`${g.url}/api/sessions/api:x`, { headers: g.auth })).status).toBe(404);

    release();
    expect(await slow).toBe("answer to take your time");
    await until(async () => (await del("api:y")).status === 200 || undefined, 30_000, "api:y to be deletable once its turn finished");
    const list = await runCli(["sessions", "list"], env);
    expect(list.stdout).toBe("no sessions yet\n");
    // The deleted session starts afresh on its next message.
    expect(await ask(g, "api:x", "new start")).toBe("answer to new start");
    const fresh = (await (await fetch(`${g.url}/api/sessions/api:x`, { headers: g.auth })).json()) as { messages: Array<{ content: string }>; epoch: number };
    expect(fresh.messages.map((m) => m.content)).toEqual(["new start", "answer to new start"]);
    expect(fresh.epoch).toBe(0);
  });
});
