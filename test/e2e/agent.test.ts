import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";

describe("troupe agent (real process, fake model over loopback)", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  afterEach(async () => fake?.close());

  async function home(url: string): Promise<string> {
    const dir = await tempDir();
    await writeFile(
      join(dir, "config.json"),
      JSON.stringify({ agents: { defaults: { provider: "custom", model: "fake-model", timezone: "Europe/Paris" } }, providers: { custom: { apiBase: url } } }),
    );
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

    const second = await runCli(["agent", "-m", "what did I say?"], { TROUPE_HOME: dir });
    expect(second.stdout).toBe("You said hi before.\n");
    const sent = fake.requests[1]?.body.messages ?? [];
    expect(sent.map((m) => m.role)).toEqual(["system", "user", "assistant", "user"]);
    expect(sent[1]?.content).toBe("hi");
    expect(sent[2]?.content).toBe("Hello there!");
    // The runtime context heads the current user message only, never the system prompt.
    expect(String(sent[3]?.content)).toMatch(/^\[Runtime Context\]\nCurrent Time: .*\(Europe\/Paris\)\nChannel: cli\nChat ID: direct\n\nwhat did I say\?$/);
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

  it("interactive mode reads lines from stdin, answers commands, and exits at end of input", async () => {
    fake = await startFakeOpenAi([{ content: "first reply" }, { content: "fresh reply" }]);
    const dir = await home(fake.url);
    const r = await runCli(["agent", "--session", "cli:s2"], { TROUPE_HOME: dir }, "hello\n/help\n/new\nagain\n/status\n");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("first reply");
    expect(r.stdout).toContain("/new — start a new conversation");
    expect(r.stdout).toContain("New session started.");
    expect(r.stdout).toContain("fresh reply");
    expect(r.stdout).toMatch(/Session cli:s2: 2 turn\(s\), 30 tokens/);
    // After /new the model no longer sees the earlier exchange.
    expect(fake.requests[1]?.body.messages.map((m) => m.role)).toEqual(["system", "user"]);
  });

  it("a model that keeps failing ends the turn with an apology, not a crash", async () => {
    fake = await startFakeOpenAi([{ status: 401 }]);
    const dir = await home(fake.url);
    const r = await runCli(["agent", "-m", "hi"], { TROUPE_HOME: dir });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Sorry, I could not finish this: model call to custom failed \(HTTP 401\)/);
  });
});
