import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { writeConfig, writeGatewayHome } from "../helpers/daemon.js";
import { startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { until } from "../helpers/wait.js";

describe("troupe agent with the built-in tools (real process, fake model)", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let gateway: GatewayProcess | undefined;
  closeAfterEach(() => [gateway, fake]);

  it("writes, runs, reads and messages inside the workspace; escapes and secrets stay out", async () => {
    fake = await startFakeOpenAi([
      {
        toolCalls: [
          { name: "write_file", arguments: { path: "notes/plan.md", content: "step one\nstep two\n" } },
          { name: "exec", arguments: { command: "wc -l < notes/plan.md; env" } },
          { name: "message", arguments: { content: "Working on it…" } },
        ],
      },
      {
        toolCalls: [
          { name: "read_file", arguments: { path: "notes/plan.md" } },
          { name: "read_file", arguments: { path: "../config.json" } },
          { name: "exec", arguments: { command: "cat /etc/passwd" } },
        ],
      },
      { content: "The plan has two steps." },
    ]);
    const dir = await tempDir();
    await writeConfig(dir, { agents: { defaults: { provider: "custom", model: "fake-model" } }, providers: { custom: { apiBase: fake.url } } });
    const r = await runCli(["agent", "-m", "make a plan"], { TROUPE_HOME: dir, TROUPE_PROVIDERS__CUSTOM__API_KEY: "sk-e2e-secret-key" });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    // The message tool wrote to this chat in the turn: the final reply is not printed again (nanobot's _sent_in_turn).
    expect(r.stdout).toBe("Working on it…\n");
    expect(await readFile(join(dir, "workspace/notes/plan.md"), "utf8")).toBe("step one\nstep two\n");

    const tools = fake.requests[0]?.body.tools?.map((t) => t.function.name);
    expect(tools).toEqual(["cron", "edit_file", "exec", "glob", "grep", "list_dir", "message", "read_file", "web_fetch", "web_search", "write_file"]);

    const results = (i: number) => (fake?.requests[i]?.body.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content));
    const first = results(1);
    expect(first[0]).toBe("Wrote 18 bytes to notes/plan.md");
    expect(first[1]).toMatch(/^2\n/);
    expect(first[1]).toMatch(/Exit code: 0$/);
    expect(first[1]).not.toContain("sk-e2e-secret-key");
    expect(first[1]).not.toContain("TROUPE_");
    expect(first[2]).toBe("Message queued for delivery to cli:direct.");
    const second = results(2).slice(3);
    expect(second[0]).toBe("1| step one\n2| step two\n\n(End of file — 2 lines total)");
    expect(second[1]).toMatch(/^Error: access denied: \.\.\/config\.json is outside the workspace/);
    expect(second[2]).toMatch(/^Error: command refused: \/etc\/passwd is outside the workspace/);
  });

  // nanobot's `agent` command hands AgentLoop a CronService, so the cron skill it lists works without a
  // gateway: the job is stored, and the gateway runs it when it starts.
  it("the cron tool without a daemon: the job is stored, troupe cron list shows it, and the gateway runs it", async () => {
    const isRun = (req: { body: { messages: Array<{ content: unknown }> } }) => JSON.stringify(req.body.messages.at(-1)?.content ?? "").includes("[Scheduled job");
    fake = await startFakeOpenAi(
      [{ toolCalls: [{ name: "cron", arguments: { action: "add", name: "water", message: "Remind me to drink water", every_seconds: 2 } }] }, { content: "Scheduled." }],
      (req) => (isRun(req) ? { content: "Drink water now." } : undefined),
    );
    const dir = await tempDir();
    await writeGatewayHome(dir, fake.url, { gateway: { heartbeat: { enabled: false } } });
    const r = await runCli(["agent", "-m", "remind me to drink water every 2 seconds"], { TROUPE_HOME: dir });
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("Scheduled.\n");
    const result = (fake.requests[1]?.body.messages ?? []).find((m) => m.role === "tool");
    const id = /^Created job 'water' \(id: ([0-9a-f]+), every 2s\)$/.exec(String(result?.content))?.[1];
    expect(id, String(result?.content)).toBeDefined();
    const listed = await runCli(["cron", "list"], { TROUPE_HOME: dir });
    expect(listed.stdout).toMatch(new RegExp(`${id}\\s+water\\s+every 2s\\s+enabled`));
    gateway = await startGateway(dir);
    const run = await until(() => fake!.requests.find(isRun), 20_000, "the gateway to run the job");
    expect(JSON.stringify(run.body.messages.at(-1)?.content)).toContain("Remind me to drink water");
  }, 120_000);
});
