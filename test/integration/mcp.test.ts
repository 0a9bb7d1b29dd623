import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startDaemon } from "../helpers/daemon.js";
import { alive, fixtureLog, startHub, stdioFixture } from "../helpers/mcp.js";
import { useTempDirs } from "../helpers/tmp.js";
import { toolCtx } from "../helpers/tools.js";
import { until } from "../helpers/wait.js";
import { startHttpFixture, type HttpFixture } from "../fixtures/mcp-server.js";
import { defineTool } from "../../src/tools/contract.js";
import { z } from "zod";

const tempDir = useTempDirs();
const running: Array<{ stop(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
});
const track = <T extends { stop(): Promise<void> }>(r: T) => (running.push(r), r);

async function readyHub(servers: Record<string, Record<string, unknown>>, opts: Parameters<typeof startHub>[1] = {}) {
  const h = track(startHub(servers, opts));
  for (const name of Object.keys(servers)) await until(() => h.state(name) === "ready", 60_000, `${name} ready`);
  return h;
}

describe("MCP over stdio (the SDK fixture server)", () => {
  it("registers the server's tools after the built-ins, with its annotations and normalised schemas", async () => {
    const dir = await tempDir();
    const builtin = defineTool({ name: "read_file", description: "read", parameters: z.object({ path: z.string() }), readOnly: true, execute: async () => "" });
    const h = await readyHub({ fx: stdioFixture(join(dir, "log")) }, { builtins: [builtin] });
    const names = h.registry.schemas().map((s) => s.function.name);
    expect(names[0]).toBe("read_file");
    expect(names).toEqual(expect.arrayContaining(["mcp_fx_echo", "mcp_fx_record", "mcp_fx_hang", "mcp_fx_read_resource", "mcp_fx_prompt_greet"]));
    expect(h.registry.get("mcp_fx_echo")).toMatchObject({ readOnly: true, idempotent: false, source: "mcp" });
    expect(h.registry.get("mcp_fx_record")).toMatchObject({ readOnly: false, idempotent: false });
    const record = h.registry.schemas().find((s) => s.function.name === "mcp_fx_record")!.function.parameters as { type: string; properties: Record<string, Record<string, unknown>> };
    expect(record.type).toBe("object");
    // zod's nullable() is anyOf [string, null]: OpenAI gets a plain string marked nullable.
    expect(record.properties.tag).toMatchObject({ type: "string", nullable: true });
    expect(record.properties.tag).not.toHaveProperty("anyOf");
    expect(h.hub.status()).toEqual([expect.objectContaining({ name: "fx", transport: "stdio", state: "ready", resources: 1, prompts: 1, lastError: null })]);
    expect(h.hub.status()[0]!.tools).toBeGreaterThan(8);
  }, 120_000);

  it("a wrapped name another tool already has is made unique, never replacing that tool", async () => {
    const dir = await tempDir();
    const squatter = defineTool({ name: "mcp_fx_echo", description: "not the server's", parameters: z.object({}), execute: async () => "built-in answer" });
    const h = await readyHub({ fx: stdioFixture(join(dir, "log")) }, { builtins: [squatter] });
    expect(await h.registry.execute("mcp_fx_echo", {}, toolCtx(dir))).toBe("built-in answer");
    expect(await h.registry.execute("mcp_fx_echo_2", { text: "hi" }, toolCtx(dir))).toBe("echo: hi");
  }, 120_000);

  it("answers calls: text, tool errors, images saved to the workspace, structured content, long results cut to a file, resources, prompts", async () => {
    const dir = await tempDir();
    const h = await readyHub({ fx: stdioFixture(join(dir, "log")) });
    const ctx = toolCtx(dir);
    expect(await h.registry.execute("mcp_fx_echo", { text: "hi" }, ctx)).toBe("echo: hi");
    const failed = await h.registry.execute("mcp_fx_fail", {}, ctx);
    expect(failed).toMatch(/^Error: the fixture failed on purpose/);
    expect(failed).toContain("try a different approach");
    const picture = await h.registry.execute("mcp_fx_picture", {}, ctx);
    const saved = /saved at (\S+) in the workspace/.exec(picture)?.[1];
    expect(picture).toContain("here is a picture");
    expect((await readFile(join(dir, saved!))).subarray(1, 4).toString()).toBe("PNG");
    expect(JSON.parse(await h.registry.execute("mcp_fx_stats", {}, ctx))).toEqual({ count: 42 });
    const big = await h.registry.execute("mcp_fx_big", { chars: 5_000 }, ctx);
    expect(big).toContain("output truncated: 5000 chars");
    expect(big.length).toBeLessThan(2_500);
    expect(await h.registry.execute("mcp_fx_read_resource", { uri: "fixture://notes" }, ctx)).toBe("the notes say hello");
    expect(h.registry.get("mcp_fx_read_resource")?.description).toContain("fixture://notes");
    expect(await h.registry.execute("mcp_fx_prompt_greet", { name: "Ada" }, ctx)).toBe("user: Say hello to Ada");
    expect(await h.registry.execute("mcp_fx_prompt_greet", {}, ctx)).toMatch(/missing required parameter\(s\): name/);
  }, 120_000);

  it("gives the server a scrubbed environment plus its configured env", async () => {
    const dir = await tempDir();
    process.env.TROUPE_TEST_SECRET_KEY = "sk-should-not-leak";
    try {
      const h = await readyHub({ fx: stdioFixture(join(dir, "log"), { env: { MCP_FIXTURE_LOG: join(dir, "log"), GIVEN: "1" } }) });
      const keys = (await h.registry.execute("mcp_fx_env_keys", {}, toolCtx(dir))).split(",");
      expect(keys).toContain("GIVEN");
      expect(keys).toContain("PATH");
      expect(keys).not.toContain("TROUPE_TEST_SECRET_KEY");
    } finally {
      delete process.env.TROUPE_TEST_SECRET_KEY;
    }
  }, 120_000);

  it("cancels a call past toolTimeout, and a call whose turn is cancelled; the server hears the cancellation", async () => {
    const dir = await tempDir();
    const log = join(dir, "log");
    const h = await readyHub({ fx: stdioFixture(log, { toolTimeout: 2 }) });
    const timedOut = await h.registry.execute("mcp_fx_hang", {}, toolCtx(dir));
    expect(timedOut).toMatch(/tool hang on MCP server "fx" timed out after 2s/);
    await until(async () => (await fixtureLog(log)).some((e) => e.tool === "hang" && e.event === "cancelled"), 20_000, "the server to hear of the timeout");
    const abort = new AbortController();
    const call = h.registry.execute("mcp_fx_slow_read", { ms: 60_000 }, toolCtx(dir, { signal: abort.signal }));
    await until(async () => (await fixtureLog(log)).some((e) => e.tool === "slow_read" && e.event === "start"), 20_000, "the slow call to start");
    abort.abort(new Error("turn cancelled"));
    await expect(call).rejects.toThrow();
    // The server heard notifications/cancelled: its handler was aborted.
    await until(async () => (await fixtureLog(log)).some((e) => e.tool === "slow_read" && e.event === "cancelled"), 20_000, "the server to hear of the cancel");
    expect((await fixtureLog(log)).some((e) => e.tool === "slow_read" && e.event === "done")).toBe(false);
    expect(h.state("fx")).toBe("ready");
  }, 120_000);

  it("swaps in the new tool list on notifications/tools/list_changed", async () => {
    const dir = await tempDir();
    const h = await readyHub({ fx: stdioFixture(join(dir, "log")) });
    expect(h.registry.get("mcp_fx_extra_1")).toBeUndefined();
    expect(await h.registry.execute("mcp_fx_add_tool", {}, toolCtx(dir))).toBe("added extra_1");
    await until(() => h.registry.get("mcp_fx_extra_1"), 20_000, "the new tool in the registry");
    expect(await h.registry.execute("mcp_fx_extra_1", {}, toolCtx(dir))).toBe("extra_1 ran");
  }, 120_000);

  it("a server that dies mid-call: the call gets an error naming the server, it reconnects, the next call works", async () => {
    const dir = await tempDir();
    const log = join(dir, "log");
    const h = await readyHub({ fx: stdioFixture(log) });
    const firstPid = (await fixtureLog(log)).find((e) => e.event === "started")!.pid;
    const result = await h.registry.execute("mcp_fx_die", {}, toolCtx(dir));
    expect(result).toMatch(/MCP server "fx" lost its connection/);
    await until(async () => (await fixtureLog(log)).filter((e) => e.event === "started").length >= 2 && h.state("fx") === "ready", 30_000, "a second server process");
    expect(await h.registry.execute("mcp_fx_echo", { text: "again" }, toolCtx(dir))).toBe("echo: again");
    expect(alive(firstPid)).toBe(false);
  }, 120_000);

  it("a call while the server reconnects is an error naming the server and its state", async () => {
    const dir = await tempDir();
    const h = await readyHub({ fx: stdioFixture(join(dir, "log")) }, { policy: { baseDelayMs: 5_000 } });
    await h.registry.execute("mcp_fx_die", {}, toolCtx(dir));
    await until(() => h.state("fx") === "reconnecting", 20_000, "reconnecting");
    expect(await h.registry.execute("mcp_fx_echo", { text: "x" }, toolCtx(dir))).toMatch(/MCP server "fx" is reconnecting \(last error: exited with code 3\b.*\)/);
  }, 120_000);

  it("past the restart limit a server is failed, its tools leave the registry, and the other servers keep working", async () => {
    const dir = await tempDir();
    const h = track(
      startHub(
        { broken: { command: process.execPath, args: ["-e", "process.exit(1)"] }, fx: stdioFixture(join(dir, "log")) },
        { policy: { maxRestarts: 2, baseDelayMs: 10 } },
      ),
    );
    await until(() => h.state("broken") === "failed", 30_000, "the broken server to fail");
    await until(() => h.state("fx") === "ready", 30_000, "fx ready");
    const broken = h.hub.status().find((s) => s.name === "broken")!;
    expect(broken.lastError).toMatch(/closed|exit/i);
    expect(h.registry.names().some((n) => n.startsWith("mcp_broken_"))).toBe(false);
    expect(h.actors[0]!.getSnapshot().value).toBe("failed");
    expect(await h.registry.execute("mcp_fx_echo", { text: "ok" }, toolCtx(dir))).toBe("echo: ok");
    expect(h.hub.note()).toMatch(/broken: failed/);
  }, 120_000);

  it("enabledTools: raw and wrapped names pick tools; resources and prompts only with * or by name; [] registers nothing", async () => {
    const dir = await tempDir();
    const h = await readyHub({
      some: stdioFixture(join(dir, "a"), { enabledTools: ["echo", "mcp_some_record", "no_such_tool"] }),
      none: stdioFixture(join(dir, "b"), { enabledTools: [] }),
      extras: stdioFixture(join(dir, "c"), { enabledTools: ["mcp_extras_read_resource", "mcp_extras_prompt_greet"] }),
    });
    const names = h.registry.names();
    expect(names.filter((n) => n.startsWith("mcp_some_")).sort()).toEqual(["mcp_some_echo", "mcp_some_record"]);
    expect(names.filter((n) => n.startsWith("mcp_none_"))).toEqual([]);
    expect(names.filter((n) => n.startsWith("mcp_extras_")).sort()).toEqual(["mcp_extras_prompt_greet", "mcp_extras_read_resource"]);
  }, 120_000);

  it("stopping while a server reconnects leaves no process behind and throws nothing", async () => {
    const dir = await tempDir();
    const log = join(dir, "log");
    const h = await readyHub({ fx: stdioFixture(log) }, { policy: { baseDelayMs: 1 } });
    await h.registry.execute("mcp_fx_die", {}, toolCtx(dir));
    // The second process is starting (or about to) when everything stops.
    await until(async () => (await fixtureLog(log)).filter((e) => e.event === "started").length >= 2 || h.state("fx") === "connecting", 30_000, "a reconnection under way");
    await h.stop();
    const pids = (await fixtureLog(log)).filter((e) => e.event === "started").map((e) => e.pid);
    await until(() => pids.every((p) => !alive(p)), 20_000, "every server process to be gone");
  }, 120_000);

  it("closing kills the server's whole process group", async () => {
    const dir = await tempDir();
    const log = join(dir, "log");
    // A shell that leaves a helper running in the background (stdin /dev/null: it never sees the end of
    // troupe's pipe), then runs the server. Only a kill of the whole group reaches the helper.
    const pidFile = join(dir, "helper.pid");
    const script = `sleep 300 & echo $! > "${pidFile}"; "${process.execPath}" --import tsx "${(stdioFixture(log).args as string[])[2]}"; true`;
    const h = track(startHub({ fx: { ...stdioFixture(log), command: "/bin/sh", args: ["-c", script] } }));
    await until(() => h.state("fx") === "ready", 30_000, "ready");
    const pid = (await fixtureLog(log)).find((e) => e.event === "started")!.pid;
    const helper = Number((await readFile(pidFile, "utf8")).trim());
    expect(alive(pid) && alive(helper)).toBe(true);
    await h.stop();
    await until(() => !alive(helper), 10_000, "the background helper to be gone");
    await until(() => !alive(pid), 10_000, "the grandchild server to be gone");
  }, 120_000);
});

describe("MCP over HTTP", () => {
  const fixtures: HttpFixture[] = [];
  afterEach(async () => {
    await Promise.all(fixtures.splice(0).map((f) => f.close()));
  });

  it.each(["streamableHttp", "sse"] as const)("%s: connects, lists and calls (transport inferred from the url)", async (kind) => {
    const dir = await tempDir();
    const fx = await startHttpFixture({ kind });
    fixtures.push(fx);
    const h = await readyHub({ web: { url: fx.url, headers: { "x-test": "1" } } });
    expect(h.hub.status()[0]).toMatchObject({ transport: kind, state: "ready" });
    expect(await h.registry.execute("mcp_web_echo", { text: "over http" }, toolCtx(dir))).toBe("echo: over http");
    expect(await h.registry.execute("mcp_web_read_resource", { uri: "fixture://notes" }, toolCtx(dir))).toBe("the notes say hello");
  }, 120_000);

  it("streamable HTTP: a call to a restarted server (its session gone) reconnects and is sent again, once", async () => {
    const dir = await tempDir();
    let fx = await startHttpFixture();
    const port = fx.port;
    const h = await readyHub({ web: { url: fx.url } });
    await fx.close();
    fx = await startHttpFixture({ port });
    const log = join(dir, "http.log");
    process.env.MCP_FIXTURE_LOG = log;
    fixtures.push(fx);
    // The old session is unknown to the new server (404): it never ran the call, so it is sent again on a new session.
    try {
      // Two calls find the session gone at once: one reconnection serves both (nanobot #concurrent-reconnect).
      const [a, b] = await Promise.all(["back", "again"].map((text) => h.registry.execute("mcp_web_echo", { text }, toolCtx(dir))));
      expect([a, b]).toEqual(["echo: back", "echo: again"]);
    } finally {
      delete process.env.MCP_FIXTURE_LOG;
    }
    expect(h.state("web")).toBe("ready");
    expect((await fixtureLog(log)).filter((e) => e.tool === "echo")).toHaveLength(2);
  }, 120_000);
});

describe("MCP over SSE, restarted", () => {
  it("SSE: a restarted server is reconnected and answers again", async () => {
    const dir = await tempDir();
    let fx = await startHttpFixture({ kind: "sse" });
    const port = fx.port;
    const h = await readyHub({ web: { url: fx.url } });
    await fx.close();
    fx = await startHttpFixture({ port, kind: "sse" });
    try {
      await until(async () => (await h.registry.execute("mcp_web_echo", { text: "back" }, toolCtx(dir))) === "echo: back", 30_000, "the restarted SSE server to answer");
    } finally {
      await fx.close();
    }
  }, 120_000);
});

describe("MCP servers under the daemon's supervisor", () => {
  it("each server is a child mcp:<name> in the live tree; one past its limit is failed there and in the supervisor, the others ready", async () => {
    const dir = await tempDir();
    const daemon = await startDaemon(
      dir,
      "http://127.0.0.1:9",
      { config: { tools: { mcpServers: { fx: stdioFixture(join(dir, "log")), gone: { command: "/nonexistent/mcp-server" } } } } },
      { policy: { maxRestarts: 1, baseDelayMs: 10, maxDelayMs: 50 } },
    );
    try {
      await until(() => daemon.supervisor.getSnapshot().context.children["mcp:gone"]?.status === "failed", 30_000, "gone failed in the supervisor");
      await until(() => daemon.mcp?.status().find((s) => s.name === "fx")?.state === "ready", 60_000, "fx ready");
      const children = daemon.tree.tree()!.children;
      expect(children).toContainEqual(expect.objectContaining({ id: "mcp:gone", machine: "mcp", state: "failed" }));
      expect(children).toContainEqual(expect.objectContaining({ id: "mcp:fx", machine: "mcp", state: "ready" }));
      expect(daemon.supervisor.getSnapshot().context.children["mcp:gone"]?.lastError).toBe("command not found: /nonexistent/mcp-server (check tools.mcpServers.gone.command)");
      expect(daemon.supervisor.getSnapshot().context.children["mcp:fx"]?.status).toBe("running");
    } finally {
      await daemon.shutdown();
    }
    const pid = (await fixtureLog(join(dir, "log"))).find((e) => e.event === "started")!.pid;
    await until(() => !alive(pid), 20_000, "fx to stop with the daemon");
  }, 120_000);
});
