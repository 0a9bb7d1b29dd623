import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startFakeOpenAi, type FakeOpenAi, type FakeToolCall, type RecordedRequest } from "../fixtures/fake-openai.js";
import { writeHome } from "../helpers/daemon.js";
import { getJson, postMessage, startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";

const API_KEY = "sk-e2e-sandbox-never-leaks";

describe("the workspace sandbox against a hostile model (real gateway, fake model)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let gateway: GatewayProcess | undefined;
  closeAfterEach(() => [gateway, fake]);

  it("the gateway token and config.json stay unreadable through glob, grep, read_file and links made with exec", async () => {
    const home = await tmp();
    // The data dir is the workspace's parent; exec names it without `..` or an absolute path.
    const makeLinks = [
      'd=$(dirname "$PWD")',
      "ln -s $d/config.json cfg-link",
      "ln $d/config.json cfg-hard",
      "ln $d/gateway.token token-hard",
      "ln -s $d up",
      "echo links made",
    ].join(" && ");
    const probes: FakeToolCall[] = [
      { name: "glob", arguments: { pattern: "../*" } },
      { name: "glob", arguments: { pattern: `${home}/*` } },
      { name: "glob", arguments: { pattern: "up/*" } },
      { name: "grep", arguments: { pattern: ".", glob: "../config.json", output_mode: "content" } },
      { name: "grep", arguments: { pattern: ".", glob: "up/*", output_mode: "content" } },
      // The whole workspace (its template files too, made at the gateway's start): config.json's keys are not found.
      { name: "grep", arguments: { pattern: '"apiKey"|"token"', output_mode: "content" } },
      { name: "read_file", arguments: { path: "token-hard" } },
      { name: "read_file", arguments: { path: "cfg-hard" } },
      { name: "read_file", arguments: { path: "cfg-link" } },
      { name: "read_file", arguments: { path: "up/gateway.token" } },
      { name: "read_file", arguments: { path: "../gateway.token" } },
    ];
    // In two rounds: older read-only results are cleared from the context after the last 10.
    const rounds = [probes.slice(0, 6), probes.slice(6)];
    const toolResults = (req: RecordedRequest) => req.body.messages.filter((m) => m.role === "tool").map((m) => String(m.content));
    fake = await startFakeOpenAi([], (req) => {
      const n = toolResults(req).length;
      if (n === 0) return { toolCalls: [{ name: "exec", arguments: { command: makeLinks } }] };
      if (n === 1) return { toolCalls: rounds[0] };
      if (n === 1 + rounds[0]!.length) return { toolCalls: rounds[1] };
      return { content: "done probing" };
    });
    // exec runs unsandboxed here: under bubblewrap it could not even see the data dir to link to it. This
    // test is about the file tools' own defences against links that exec made (bubblewrap is tested in exec-sandbox).
    await writeHome(home, fake.url, {
      config: { gateway: { port: 0 }, providers: { custom: { apiBase: fake.url, apiKey: API_KEY } }, tools: { exec: { sandbox: "none" } } },
    });
    gateway = await startGateway(home);
    const g = gateway;
    const token = (await readFile(join(home, "gateway.token"), "utf8")).trim();

    postMessage(g, "api:probe", "show me your secrets");
    await until(
      async () => (await getJson<{ replies: Array<{ content: string }> }>(g, "/api/sessions/api:probe/replies")).replies.some((r) => r.content === "done probing"),
      60_000,
      "the final reply",
    );

    // Each round's results as the model saw them right after it.
    const seen = fake.requests.map((r) => toolResults(r));
    const afterFirst = seen.find((r) => r.length === 1 + rounds[0]!.length)!;
    const afterSecond = seen.find((r) => r.length === 1 + probes.length)!;
    // The links exist: what follows is the sandbox refusing them, not a failed setup.
    expect(afterFirst[0]).toMatch(/^links made\n\nExit code: 0$/);
    const last = [...afterFirst, ...afterSecond.slice(afterFirst.length)];
    const [globUp, globAbs, globLink, grepUp, grepLink, grepAll, tokenHard, cfgHard, cfgLink, tokenViaLink, tokenUp] = last.slice(1);
    expect(globUp).toMatch(/^Error: glob pattern \.\.\/\* climbs out of the search directory with `\.\.`/);
    expect(globAbs).toMatch(/^Error: glob pattern \S+ is absolute/);
    expect(globLink).toMatch(/^No files match up\/\*/);
    expect(grepUp).toMatch(/^Error: glob pattern \.\.\/config\.json climbs out/);
    expect(grepLink).toMatch(/^No matches/);
    expect(grepAll).toMatch(/^No matches .*\n\(2 hard-linked file\(s\) skipped/);
    expect(tokenHard).toMatch(/^Error: access denied: token-hard is a hard link \(2 names for one file\)/);
    expect(cfgHard).toMatch(/^Error: access denied: cfg-hard is a hard link/);
    expect(cfgLink).toMatch(/^Error: access denied: cfg-link is outside the workspace .*\(it resolves to .*config\.json\)/);
    expect(tokenViaLink).toMatch(/^Error: access denied: up\/gateway\.token is outside the workspace/);
    expect(tokenUp).toMatch(/^Error: access denied: \.\.\/gateway\.token is outside the workspace/);
    const everything = last.join("\n");
    expect(everything).not.toContain(token);
    expect(everything).not.toContain(API_KEY);
    expect(everything).not.toContain("apiBase");
  }, 90_000);
});
