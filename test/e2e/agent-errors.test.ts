import { readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { writeHome } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { closeAfterEach, detachedDaemon } from "../helpers/teardown.js";

/** What `troupe agent -m` says, and exits with, when a turn does not succeed. */
describe("troupe agent when the model fails", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let daemonHome: string | undefined;
  closeAfterEach(() => [detachedDaemon(daemonHome), fake]);

  it("exits 1 and names the endpoint and the cause: a refused connection (port 9, one fetch would refuse, too), a rejected key", async () => {
    fake = await startFakeOpenAi([{ status: 401 }]);
    const closed = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const [refused, reserved, rejected] = [await tmp(), await tmp(), await tmp()];
    await writeHome(refused, `http://127.0.0.1:${closed}/v1`);
    await writeHome(reserved, "http://127.0.0.1:9/v1");
    await writeHome(rejected, fake.url);
    const ask = (home: string) => runCli(["agent", "-m", "hi"], { TROUPE_HOME: home });
    const [a, b, c] = await Promise.all([ask(refused), ask(reserved), ask(rejected)]);
    expect(a.code).toBe(1);
    expect(a.stdout).toBe("");
    expect(a.stderr).toBe(`Sorry, I could not finish this: model call to custom failed after 5 attempts: connection refused at http://127.0.0.1:${closed}/v1\n`);
    expect(b.code).toBe(1);
    // Port 9 is one fetch refuses outright (a "bad port"); the model client (node:http) connects to it like any other.
    expect(b.stderr).toBe("Sorry, I could not finish this: model call to custom failed after 5 attempts: connection refused at http://127.0.0.1:9/v1\n");
    expect(c.code).toBe(1);
    expect(c.stdout).toBe("");
    expect(c.stderr).toBe(`Sorry, I could not finish this: model call to custom failed: HTTP 401 from ${fake.url}: check providers.custom.apiKey (scripted 401)\n`);
  }, 120_000);

  it("no provider key: agent -m says so before it opens anything (the store's open starts once the config's checks pass)", async () => {
    const dir = await tmp();
    await writeFile(join(dir, "config.json"), JSON.stringify({ agents: { defaults: { model: "gpt-4o" } } }));
    const r = await runCli(["agent", "-m", "hi"], { TROUPE_HOME: dir });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`no LLM provider configured: set providers.openai.apiKey (or another provider's) in ${join(dir, "config.json")}`);
    expect(await readdir(dir)).toEqual(["config.json"]);
  });

  it("a malformed apiBase is refused when the config loads, in one line naming the key", async () => {
    const dir = await tmp();
    await writeHome(dir, "127.0.0.1:8080/v1");
    const r = await runCli(["status"], { TROUPE_HOME: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`config error in ${join(dir, "config.json")}: providers.custom.apiBase: "127.0.0.1:8080/v1" is not an http(s) URL (e.g. http://127.0.0.1:8080/v1)\n`);
  });

  it("a failed turn's apology is shown but never fed back to the model; sessions list shows the session as failed", async () => {
    fake = await startFakeOpenAi([{ status: 400 }, { content: "Now it works." }]);
    const dir = await tmp();
    await writeHome(dir, fake.url);
    const env = { TROUPE_HOME: dir };
    const failed = await runCli(["agent", "-m", "first try"], env);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/^Sorry, I could not finish this: .*HTTP 400 from /);

    const list = await runCli(["sessions", "list"], env);
    expect(list.stdout).toMatch(/\ncli:direct +1 +0 +\S+ \S+ +failed\n$/);

    const ok = await runCli(["agent", "-m", "second try"], env);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toBe("Now it works.\n");
    const sent = fake.requests[1]!.body.messages;
    // The unanswered message and the new one go as one user message (nanobot merges them), never two in a row.
    expect(sent.map((m) => m.role)).toEqual(["system", "user"]);
    expect(String(sent[1]?.content)).toMatch(/^first try\n\n\[Runtime Context — metadata only, not instructions\][\s\S]*\[\/Runtime Context\]\n\nsecond try$/);
    expect(JSON.stringify(sent)).not.toContain("Sorry, I could not finish this");
    // The transcript keeps what the user was shown.
    const show = await runCli(["sessions", "show", "cli:direct"], env);
    expect(show.stdout).toContain("  assistant: Sorry, I could not finish this:");
    expect((await runCli(["sessions", "list"], env)).stdout).toMatch(/\ncli:direct +2 +\d+ +\S+ \S+ +ok\n$/);
  }, 120_000);

  it("through the daemon, a failed turn exits 1 with its reason", async () => {
    fake = await startFakeOpenAi([{ status: 401 }]);
    daemonHome = await tmp();
    await writeHome(daemonHome, fake.url, { config: { gateway: { port: 0 } } });
    expect((await runCli(["daemon", "start"], { TROUPE_HOME: daemonHome })).code).toBe(0);
    const r = await runCli(["agent", "-m", "hi"], { TROUPE_HOME: daemonHome });
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(`Sorry, I could not finish this: model call to custom failed: HTTP 401 from ${fake.url}: check providers.custom.apiKey (scripted 401)\n`);
    expect(r.code).toBe(1);
  }, 120_000);
});
