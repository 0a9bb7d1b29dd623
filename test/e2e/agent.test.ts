import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openStore } from "../../src/store/store.js";
import { pendingOutbox } from "../../src/store/outbox.js";
import { runCli } from "../helpers/cli.js";
import { getJson, postMessage, startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { startFakeOpenAi, type FakeOpenAi, type RecordedRequest } from "../fixtures/fake-openai.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { writeConfig } from "../helpers/daemon.js";

/** The text the user typed, without the runtime context that heads it. */
const typed = (req: RecordedRequest) => String(req.body.messages.findLast((m) => m.role === "user")?.content).split("\n").at(-1);

describe("troupe agent (real process, fake model over loopback)", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let gateway: GatewayProcess | undefined;
  closeAfterEach(() => [gateway, fake]);

  async function home(url: string): Promise<string> {
    const dir = await tempDir();
    await writeConfig(dir, {
      agents: { defaults: { provider: "custom", model: "fake-model", timezone: "Europe/Paris" } },
      providers: { custom: { apiBase: url } },
      gateway: { port: 0 },
    });
    return dir;
  }

  it("with no provider configured exits non-zero with one line saying what to set", async () => {
    const dir = await tempDir();
    const r = await runCli(["agent", "-m", "hi"], { TROUPE_HOME: dir });
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(
      `no LLM provider configured: set providers.openai.apiKey (or another provider's) in ${join(dir, "config.json")}, or export TROUPE_PROVIDERS__OPENAI__API_KEY`,
    );
  });

  it("-m runs one turn, prints the reply, and the session keeps the history", async () => {
    fake = await startFakeOpenAi([{ content: "<think>greet</think>Hello there!" }, { content: "You said hi before." }]);
    const dir = await home(fake.url);
    const first = await runCli(["agent", "-m", "hi"], { TROUPE_HOME: dir });
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    expect(first.stdout).toBe("Hello there!\n");
    // The control API it served while it held the store is gone with it, and so is its record.
    expect(existsSync(join(dir, "agent.json"))).toBe(false);

    const second = await runCli(["agent", "-m", "what did I say?"], { TROUPE_HOME: dir });
    expect(second.stdout).toBe("You said hi before.\n");
    const sent = fake.requests[1]?.body.messages ?? [];
    expect(sent.map((m) => m.role)).toEqual(["system", "user", "assistant", "user"]);
    expect(sent[1]?.content).toBe("hi");
    expect(sent[2]?.content).toBe("Hello there!");
    // nanobot's runtime-context block heads the current user message only, never the system prompt
    // nor the stored history (the first message came back as written).
    expect(String(sent[3]?.content)).toMatch(
      /^\[Runtime Context — metadata only, not instructions\]\nCurrent Time: \d{4}-\d\d-\d\d \d\d:\d\d \(\w+day\) \(Europe\/Paris, UTC\+0[12]:00\)\nChannel: cli\nChat ID: direct\n\[\/Runtime Context\]\n\nwhat did I say\?$/,
    );
    expect(String(sent[0]?.content)).not.toContain("Current Time");
    expect(fake.requests[0]?.body.model).toBe("fake-model");
  });

  it("refuses a session key with a control character before doing anything, saying why", async () => {
    fake = await startFakeOpenAi([{ content: "never" }]);
    const dir = await home(fake.url);
    const r = await runCli(["agent", "-m", "hi", "--session", "cli:a\u0001b"], { TROUPE_HOME: dir });
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe('invalid session key "cli:a\\u{1}b": it must be printable text, but has a control character (U+0001) at position 5');
    const show = await runCli(["sessions", "show", "cli:a\nb"], { TROUPE_HOME: dir });
    expect(show.code).toBe(1);
    expect(show.stderr.trim()).toMatch(/^invalid session key "cli:a\\u\{a\}b": .*control character \(U\+000A\)/);
    expect(fake.requests).toHaveLength(0);
  });

  it("a model that keeps failing ends the turn with an apology on stderr and exit 1, not a crash", async () => {
    fake = await startFakeOpenAi([{ status: 401 }]);
    const dir = await home(fake.url);
    const r = await runCli(["agent", "-m", "hi"], { TROUPE_HOME: dir });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(/^Sorry, I could not finish this: model call to custom failed: HTTP 401 from /);
  });

  it("a turn interrupted in-process is left alone by the daemon and finished, in order, before the session's next message", async () => {
    fake = await startFakeOpenAi([], (req) => {
      if (req.body.messages.at(-1)?.role === "tool") return { content: "First done." };
      if (typed(req) === "first") return { toolCalls: [{ name: "exec", arguments: { command: "echo first >> runs.txt" } }] };
      if (typed(req) === "second") return { content: "Second answer." };
      return { content: "api answer." };
    });
    const dir = await home(fake.url);
    const runs = async () => (await readFile(join(dir, "workspace/runs.txt"), "utf8").catch(() => "")).split("\n").filter(Boolean);

    // Killed at its first model call: the turn is checkpointed with the user message, nothing more.
    const killed = await runCli(["agent", "-m", "first"], { TROUPE_HOME: dir, TROUPE_FAULT: "awaiting-model" });
    expect(killed.code).toBeNull();

    // (a) The daemon serves no "cli" channel: it does not run that turn, and answers its own messages.
    gateway = await startGateway(dir);
    const g = gateway;
    postMessage(g, "api:x", "hello");
    await until(async () => (await getJson<{ replies: unknown[] }>(g, "/api/sessions/api:x/replies")).replies.length > 0, 20_000, "the api reply");
    g.proc.kill("SIGTERM");
    expect((await g.exited).code).toBe(0);
    gateway = undefined;
    expect(fake.requests.map(typed)).toEqual(["hello"]);
    expect(await runs()).toEqual([]);
    const store = await openStore(join(dir, "store"));
    try {
      expect(await pendingOutbox(store, "cli")).toEqual([]);
    } finally {
      await store.close();
    }
    const held = await runCli(["sessions", "show", "cli:direct"], { TROUPE_HOME: dir });
    expect(held.stdout).toMatch(/turns:\n {2}\S+ {2}\S+ \S+ {2}awaiting_model \(interrupted\)\n$/);
    expect(held.stdout).not.toContain("assistant");
    expect(g.output()).toMatch(/not resuming turns on channels this daemon does not serve[\s\S]*cli:direct/);

    // (b) The next in-process message first finishes the interrupted turn, then is answered. As nanobot's
    // `agent -m` prints only its own response, stdout holds this message's reply alone (R=$(troupe agent -m …)
    // gets it); the earlier turn's reply is on stderr, labelled.
    const second = await runCli(["agent", "-m", "second"], { TROUPE_HOME: dir });
    expect(second.code).toBe(0);
    expect(second.stdout).toBe("Second answer.\n");
    expect(second.stderr).toMatch(/^\(finishing a turn interrupted at .+\)\n\(the interrupted turn's reply:\)\nFirst done\.\n$/);
    expect(await runs()).toEqual(["first"]);
    // The model saw the finished first exchange before the second message.
    const secondSent = fake.requests.find((r) => typed(r) === "second")!.body.messages;
    expect(secondSent.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool", "assistant", "user"]);

    const show = await runCli(["sessions", "show", "cli:direct"], { TROUPE_HOME: dir });
    const transcript = show.stdout.split("transcript:\n")[1]!.split("\n\nturns:")[0]!.split("\n");
    expect(transcript).toEqual([
      "  user: first",
      '  assistant → exec({"command":"echo first >> runs.txt"})',
      expect.stringMatching(/^ {2}tool exec: /),
      "  assistant: First done.",
      "  user: second",
      "  assistant: Second answer.",
    ]);
    expect(show.stdout).toMatch(/turns:\n {2}\S+ {2}\S+ \S+ {2}responded \(resumed 1×\)\n {2}\S+ {2}\S+ \S+ {2}responded\n$/);
  }, 120_000);

  it("a daemon turn interrupted in a session is finished by troupe agent as the daemon would: its message answered once", async () => {
    fake = await startFakeOpenAi([], (req) => {
      if (req.body.messages.at(-1)?.role === "tool") return { content: "First done." };
      if (typed(req) === "first") return { toolCalls: [{ name: "exec", arguments: { command: "echo first >> runs.txt" } }] };
      return { content: "Second answer." };
    });
    const dir = await home(fake.url);
    const runs = async () => (await readFile(join(dir, "workspace/runs.txt"), "utf8").catch(() => "")).split("\n").filter(Boolean);

    // `troupe agent` through the daemon sends on the api channel; the daemon dies at the turn's first model call.
    const dying = await startGateway(dir, { TROUPE_FAULT: "awaiting-model" });
    postMessage(dying, "cli:direct", "first");
    expect((await dying.exited).signal).toBe("SIGKILL");

    const second = await runCli(["agent", "-m", "second"], { TROUPE_HOME: dir });
    expect(second.stdout).toBe("Second answer.\n");
    expect(second.stderr).toMatch(/\(the interrupted turn's reply:\)\nFirst done\.\n$/);
    expect(await runs()).toEqual(["first"]);

    // The daemon finds the message answered: it delivers the queued reply to its chat, and runs nothing again.
    gateway = await startGateway(dir);
    const g = gateway;
    const replies = await until(async () => {
      const r = await getJson<{ replies: Array<{ content: string }> }>(g, "/api/sessions/cli:direct/replies");
      return r.replies.length ? r.replies : undefined;
    }, 20_000, "the queued reply");
    expect(replies.map((r) => r.content)).toEqual(["First done."]);
    g.proc.kill("SIGTERM");
    expect((await g.exited).code).toBe(0);
    gateway = undefined;
    expect(await runs()).toEqual(["first"]);
    expect(fake.requests.map(typed)).toEqual(["first", "first", "second"]);
    expect(g.output()).not.toContain("recovering interrupted work");
  }, 120_000);
});
