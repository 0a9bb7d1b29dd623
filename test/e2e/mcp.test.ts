import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startFakeOpenAi, type FakeOpenAi, type RecordedRequest } from "../fixtures/fake-openai.js";
import { runCli, TROUPE_BIN } from "../helpers/cli.js";
import { writeHome } from "../helpers/daemon.js";
import { getJson, startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { alive, fixtureLog, stdioFixture } from "../helpers/mcp.js";
import { startHttpFixture } from "../fixtures/mcp-server.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import type { ActorNode } from "../../src/server/actor-view.js";
import type { McpServerStatus } from "../../src/mcp/hub.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { closedPort } from "../helpers/ports.js";

/**
 * A model that calls the tool a message names: "call <tool> <json args>"; a tool result is
 * answered with "tool said: <result>".
 */
function toolCaller() {
  return startFakeOpenAi([], (req: RecordedRequest) => {
    const last = req.body.messages.at(-1);
    if (last?.role === "tool") return { content: `tool said: ${String(last.content)}` };
    const m = /call (\S+) (.*)$/s.exec(String(last?.content));
    if (!m) return { content: "nothing to do" };
    return { toolCalls: [{ name: m[1]!, arguments: JSON.parse(m[2]!) as Record<string, unknown> }] };
  });
}

interface Reply {
  content: string;
}


describe("MCP servers in a real gateway (fake model, SDK fixture server)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let gateway: GatewayProcess | undefined;
  closeAfterEach(() => [gateway, fake]);

  async function ask(g: GatewayProcess, session: string, content: string): Promise<string> {
    const res = await fetch(`${g.url}/api/sessions/${encodeURIComponent(session)}/messages`, {
      method: "POST",
      headers: { ...g.auth, "content-type": "application/json" },
      body: JSON.stringify({ content }),
    });
    const text = await res.text();
    const reply = /event: reply\ndata: (.*)\n/.exec(text)?.[1];
    if (!reply) throw new Error(`no reply in: ${text}`);
    return (JSON.parse(reply) as Reply).content;
  }

  const mcpState = async (g: GatewayProcess, name: string) => (await getJson<{ servers: McpServerStatus[] }>(g, "/api/mcp")).servers.find((s) => s.name === name);

  it("a turn calls an MCP tool; the server dies mid-call (error result), is reconnected, and the next call works; shown in the actor tree and troupe mcp list", async () => {
    fake = await toolCaller();
    const home = await tmp();
    const log = join(home, "mcp.log");
    await writeHome(home, fake.url, { config: { gateway: { port: 0 }, tools: { mcpServers: { fx: stdioFixture(log) } } } });
    const g = (gateway = await startGateway(home));
    await until(async () => (await mcpState(g, "fx"))?.state === "ready", 60_000, "fx ready");
    const tree = await getJson<{ root: ActorNode }>(g, "/api/actors");
    expect(tree.root.children).toContainEqual(expect.objectContaining({ id: "mcp:fx", machine: "mcp", state: "ready" }));

    expect(await ask(g, "api:one", 'call mcp_fx_echo {"text":"hello"}')).toBe("tool said: echo: hello");
    // MCP tools come after the built-ins in what the model is offered.
    const offered = fake.requests.at(-1)!.body.tools!.map((t) => t.function.name);
    const firstMcp = offered.findIndex((n) => n.startsWith("mcp_"));
    expect(firstMcp).toBeGreaterThan(0);
    expect(offered.slice(firstMcp).every((n) => n.startsWith("mcp_"))).toBe(true);

    const listed = await runCli(["mcp", "list"], { TROUPE_HOME: home });
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/fx\s+stdio\s+ready\s+\d+\s+1\s+1/);

    const died = await ask(g, "api:one", "call mcp_fx_die {}");
    expect(died).toMatch(/MCP server "fx" lost its connection/);
    await until(async () => (await fixtureLog(log)).filter((e) => e.event === "started").length === 2 && (await mcpState(g, "fx"))?.state === "ready", 60_000, "fx reconnected");
    expect(await ask(g, "api:one", 'call mcp_fx_echo {"text":"again"}')).toBe("tool said: echo: again");

    // Stopping the gateway stops its servers.
    const pids = (await fixtureLog(log)).filter((e) => e.event === "started").map((e) => e.pid);
    g.proc.kill("SIGTERM");
    expect((await g.exited).code).toBe(0);
    await until(() => pids.every((p) => !alive(p)), 20_000, "the servers to exit");
  }, 180_000);

  it("kill -9 mid-MCP-call: the read-only call is re-run after the restart, the side-effecting one is reported interrupted", async () => {
    fake = await toolCaller();
    const home = await tmp();
    const log = join(home, "mcp.log");
    const release = join(home, "release");
    await writeHome(home, fake.url, { config: { gateway: { port: 0 }, tools: { mcpServers: { fx: stdioFixture(log) } } } });
    let g = (gateway = await startGateway(home));
    await until(async () => (await mcpState(g, "fx"))?.state === "ready", 60_000, "fx ready");
    const args = JSON.stringify({ ms: 1, untilFile: release });
    void ask(g, "api:reader", `call mcp_fx_slow_read ${args}`).catch(() => undefined);
    void ask(g, "api:writer", `call mcp_fx_slow_write ${args}`).catch(() => undefined);
    await until(async () => {
      const entries = await fixtureLog(log);
      return entries.some((e) => e.tool === "slow_read" && e.event === "start") && entries.some((e) => e.tool === "slow_write" && e.event === "start");
    }, 60_000, "both calls to start");
    g.proc.kill("SIGKILL");
    await g.exited;
    await writeFile(release, "go");

    g = gateway = await startGateway(home);
    const replies = async () => {
      const [r, w] = await Promise.all(["api:reader", "api:writer"].map((k) => getJson<{ replies: Reply[] }>(g, `/api/sessions/${encodeURIComponent(k)}/replies`)));
      return r!.replies.length && w!.replies.length ? { reader: r!.replies[0]!.content, writer: w!.replies[0]!.content } : undefined;
    };
    const done = await until(replies, 90_000, "both recovered turns to reply");
    expect(done.reader).toBe("tool said: slow read finished");
    expect(done.writer).toMatch(/tool said: Error: this call was interrupted before it completed/);
    const entries = await fixtureLog(log);
    expect(entries.filter((e) => e.tool === "slow_read" && e.event === "start")).toHaveLength(2);
    // The side effect was started once and never repeated by troupe.
    expect(entries.filter((e) => e.tool === "slow_write" && e.event === "start")).toHaveLength(1);
  }, 240_000);

  it("a streamable HTTP server on 127.0.0.1 that restarts between two turns: the second turn's call is reconnected and answered", async () => {
    fake = await toolCaller();
    const home = await tmp();
    let fx = await startHttpFixture();
    try {
      await writeHome(home, fake.url, { config: { gateway: { port: 0 }, tools: { ssrfWhitelist: ["127.0.0.1"], mcpServers: { web: { url: fx.url, toolTimeout: 20 } } } } });
      const g = (gateway = await startGateway(home));
      await until(async () => (await mcpState(g, "web"))?.state === "ready", 60_000, "web ready");
      expect(await ask(g, "api:web", 'call mcp_web_echo {"text":"first"}')).toBe("tool said: echo: first");
      const port = fx.port;
      await fx.close();
      fx = await startHttpFixture({ port });
      expect(await ask(g, "api:web", 'call mcp_web_echo {"text":"second"}')).toBe("tool said: echo: second");
      expect((await mcpState(g, "web"))?.state).toBe("ready");
    } finally {
      await fx.close();
    }
  }, 180_000);

  it("a real third-party server from npm (@modelcontextprotocol/server-filesystem) driven by a model turn", async () => {
    fake = await toolCaller();
    const home = await tmp();
    const shared = join(home, "shared");
    await mkdir(shared, { recursive: true });
    await writeFile(join(shared, "hello.txt"), "hi from the filesystem server\n");
    const entry = createRequire(import.meta.url).resolve("@modelcontextprotocol/server-filesystem/dist/index.js");
    await writeHome(home, fake.url, { config: { gateway: { port: 0 }, tools: { mcpServers: { fs: { command: process.execPath, args: [entry, shared], enabledTools: ["read_text_file", "list_directory"] } } } } });
    const g = (gateway = await startGateway(home));
    await until(async () => (await mcpState(g, "fs"))?.state === "ready", 60_000, "fs ready");
    expect((await mcpState(g, "fs"))?.tools).toBe(2);
    expect(await ask(g, "api:fs", `call mcp_fs_list_directory ${JSON.stringify({ path: shared })}`)).toContain("hello.txt");
    expect(await ask(g, "api:fs", `call mcp_fs_read_text_file ${JSON.stringify({ path: join(shared, "hello.txt") })}`)).toContain("hi from the filesystem server");
  }, 180_000);
});

describe("MCP in troupe agent and the CLI", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  closeAfterEach(() => [fake]);

  it("troupe agent -m: the first turn has the server's tools (it waits for the first connection attempt); a server that cannot start is named to the model and fails no turn", async () => {
    fake = await toolCaller();
    const home = await tmp();
    await writeHome(home, fake.url, { config: { tools: { mcpServers: { fx: stdioFixture(join(home, "mcp.log")), gone: { command: "/nonexistent/mcp-server" } } } } });
    const r = await runCli(["agent", "-m", 'call mcp_fx_echo {"text":"from the cli"}', "--no-markdown"], { TROUPE_HOME: home });
    expect(r.stderr).toBe("");
    expect(r.stdout).toContain("tool said: echo: from the cli");
    expect(r.code).toBe(0);
    const system = String(fake.requests[0]!.body.messages[0]!.content);
    // Under load the backoff may already have elapsed when the prompt is built: the server is then
    // connecting again, still named with the error of its failed first attempt.
    expect(system).toMatch(/MCP servers not ready[\s\S]*- gone: (reconnecting|connecting) \(last error: command not found: \/nonexistent\/mcp-server \(check tools\.mcpServers\.gone\.command\)/);
    expect(system).not.toMatch(/- fx:/);
  }, 120_000);

  it("troupe agent killed -9 mid-MCP-call: the next run finishes that turn, re-running the read-only call", async () => {
    fake = await toolCaller();
    const home = await tmp();
    const log = join(home, "mcp.log");
    const release = join(home, "release");
    await writeHome(home, fake.url, { config: { tools: { mcpServers: { fx: stdioFixture(log) } } } });
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("TROUPE_")));
    const agent = spawn(process.execPath, [TROUPE_BIN, "agent", "-m", `call mcp_fx_slow_read ${JSON.stringify({ ms: 1, untilFile: release })}`], { env: { ...clean, TROUPE_HOME: home } });
    const exited = new Promise((resolve) => agent.once("exit", resolve));
    await until(async () => (await fixtureLog(log)).some((e) => e.tool === "slow_read" && e.event === "start"), 60_000, "the call to start");
    agent.kill("SIGKILL");
    await exited;
    await writeFile(release, "go");
    const r = await runCli(["agent", "-m", 'call mcp_fx_echo {"text":"next"}', "--no-markdown"], { TROUPE_HOME: home });
    expect(r.stderr).toMatch(/finishing a turn interrupted/);
    // The finished turn's reply goes to stderr, labelled: stdout holds only this message's reply.
    expect(r.stderr).toContain("tool said: slow read finished");
    expect(r.stdout).toBe("tool said: echo: next\n");
    expect(r.code).toBe(0);
    expect((await fixtureLog(log)).filter((e) => e.tool === "slow_read" && e.event === "start")).toHaveLength(2);
  }, 180_000);

  it("troupe mcp list without a daemon connects once; a server that cannot start is listed as failed (exit 1)", async () => {
    fake = await toolCaller();
    const home = await tmp();
    await writeHome(home, fake.url, {
      config: { tools: { mcpServers: { fx: stdioFixture(join(home, "mcp.log")), gone: { command: "/nonexistent/mcp-server" } } } },
    });
    const r = await runCli(["mcp", "list"], { TROUPE_HOME: home });
    expect(r.stdout).toContain("daemon is not running");
    expect(r.stdout).toMatch(/fx\s+stdio\s+ready/);
    expect(r.stdout).toMatch(/gone\s+stdio\s+failed.*command not found: \/nonexistent\/mcp-server \(check tools\.mcpServers\.gone\.command\)/);
    expect(r.code).toBe(1);
  }, 120_000);

  it("troupe mcp list names why a stdio server failed at start: its exit code and last stderr line", async () => {
    const home = await tmp();
    await writeHome(home, "http://127.0.0.1:9", { config: { tools: { mcpServers: { bad: { command: "sh", args: ["-c", "echo fatal: BASE_DIR missing >&2; exit 1"] } } } } });
    const r = await runCli(["mcp", "list"], { TROUPE_HOME: home });
    expect(r.stdout).toMatch(/bad\s+stdio\s+failed.*exited with code 1: fatal: BASE_DIR missing$/m);
    expect(r.code).toBe(1);
  }, 60_000);

  it("troupe mcp list names why an HTTP server is unreachable: connection refused at its URL", async () => {
    const home = await tmp();
    const port = await closedPort();
    await writeHome(home, "http://127.0.0.1:9", { config: { tools: { ssrfWhitelist: ["127.0.0.1"], mcpServers: { web: { url: `http://127.0.0.1:${port}/mcp` } } } } });
    const r = await runCli(["mcp", "list"], { TROUPE_HOME: home });
    expect(r.stdout).toMatch(new RegExp(`web\\s+streamableHttp\\s+failed.*connection refused at http://127\\.0\\.0\\.1:${port}/mcp$`, "m"));
    expect(r.code).toBe(1);
  }, 60_000);

  it("troupe mcp list names an HTTP server on loopback without tools.ssrfWhitelist as blocked, saying how to allow it", async () => {
    const home = await tmp();
    const port = await closedPort();
    await writeHome(home, "http://127.0.0.1:9", { config: { tools: { mcpServers: { web: { url: `http://127.0.0.1:${port}/mcp` } } } } });
    const r = await runCli(["mcp", "list"], { TROUPE_HOME: home });
    expect(r.stdout).toMatch(new RegExp(`web\\s+streamableHttp\\s+failed.*blocked unsafe URL http://127\\.0\\.0\\.1:${port}/mcp: .*loopback.*tools\\.ssrfWhitelist`, "m"));
    expect(r.code).toBe(1);
  }, 60_000);

  it.each([
    [{ bad: {} }, /tools\.mcpServers\.bad\.command: needs a "command" \(a stdio server\) or a "url"/],
    [{ bad: { command: "x", url: "http://127.0.0.1:1/mcp" } }, /tools\.mcpServers\.bad\.url: has both "command" and "url"/],
    [{ bad: { url: "localhost:3001/mcp" } }, /tools\.mcpServers\.bad\.url: "localhost:3001\/mcp" is not an http\(s\) URL/],
  ])("a broken server entry stops startup with one line naming the key (%j)", async (servers, message) => {
    const home = await tmp();
    await writeHome(home, "http://127.0.0.1:9", { config: { tools: { mcpServers: servers } } });
    const r = await runCli(["gateway"], { TROUPE_HOME: home });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
  });
});
