import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { runCli } from "../helpers/cli.js";
import { writeHome } from "../helpers/daemon.js";
import { sendMessage, startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { until } from "../helpers/wait.js";

const KEY = "sk-story-0123456789abcdef";

/** The daemon log tells what happened: a line for the message, the turn, each tool call; never a secret. */
describe("logs that tell the story", () => {
  let fake: FakeOpenAi;
  let g: GatewayProcess;
  let home: string;
  beforeAll(async () => {
    fake = await startFakeOpenAi([], (req) => {
      const last = req.body.messages.at(-1);
      if (last?.role === "tool") return { content: "Listed." };
      // The command carries the api key: the log shows only a redacted hint of it.
      return { toolCalls: [{ name: "exec", arguments: { command: `echo ${KEY} && ls` } }] };
    });
    home = await mkdtemp(join(tmpdir(), "troupe-story-"));
    await writeHome(home, fake.url, { config: { gateway: { port: 0 }, providers: { custom: { apiBase: fake.url, apiKey: KEY } } } });
    g = await startGateway(home);
  });
  afterAll(async () => {
    g?.proc.kill("SIGTERM");
    await g?.exited;
    await fake?.close();
    await rm(home, { recursive: true, force: true });
  });

  it("a scripted turn: message received, turn started, tool call, turn finished; --session filters", async () => {
    expect(await sendMessage(g, "api:story", "list my files").replied).toBe(true);
    expect(await sendMessage(g, "api:other", "list them too").replied).toBe(true);
    const log = join(home, "logs", "troupe.log");
    const entries = await until(async () => {
      const lines = (await readFile(log, "utf8")).split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
      return lines.filter((e) => e.msg === "turn finished").length >= 2 && lines;
    }, 20_000, "both turns to finish in the log");
    const story = entries.filter((e) => e.sessionKey === "api:story");
    expect(story.map((e) => e.msg)).toEqual(["message received", "turn started", "tool call", "turn finished"]);
    expect(story[0]).toMatchObject({ level: 30, channel: "api", chars: "list my files".length });
    expect(story[2]).toMatchObject({ tool: "exec", outcome: "ok", durationMs: expect.any(Number) });
    expect(String(story[2]!.hint)).toContain("[REDACTED]");
    expect(story[3]).toMatchObject({ state: "responded", iterations: 1, tokens: expect.any(Number), durationMs: expect.any(Number) });
    expect(entries.some((e) => e.msg === "recovery at start: nothing was interrupted")).toBe(true);
    expect(await readFile(log, "utf8")).not.toContain(KEY);

    const shown = await runCli(["daemon", "logs", "--session", "api:story", "-n", "100"], { TROUPE_HOME: home });
    expect(shown.code).toBe(0);
    const lines = shown.stdout.trim().split("\n");
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/INFO.*\[api:story\] message received/);
    expect(lines[2]).toMatch(/\[api:story\] tool call .*"tool":"exec"/);
    expect(lines[3]).toMatch(/\[api:story\] turn finished .*"state":"responded"/);
    expect(shown.stdout).not.toContain("api:other");
  });
});
