import { createActor, fromCallback, fromPromise } from "xstate";
import { describe, expect, it } from "vitest";
import { mcpMachine } from "../../machines/mcp.machine.js";
import { supervisorMachine } from "../../machines/supervisor.machine.js";
import { parseConfig } from "../../src/config/load.js";
import { ConfigError } from "../../src/errors.js";
import { isConnectionLoss } from "../../src/mcp/adapters.js";
import { serverEnvironment, transportKind } from "../../src/mcp/connection.js";
import { enabledFilter, mcpToolName, sanitizeName, toolNameFor, uniqueNames } from "../../src/mcp/names.js";
import { normalizeInputSchema } from "../../src/mcp/schema.js";
import { until } from "../helpers/wait.js";

const servers = (mcpServers: Record<string, unknown>) => parseConfig({ tools: { mcpServers } }, "config.json").config.tools.mcpServers;
const problems = (mcpServers: Record<string, unknown>) => {
  try {
    servers(mcpServers);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};

describe("MCP config", () => {
  it("takes nanobot's entries: stdio, remote with headers, snake_case keys, defaults", () => {
    const s = servers({
      lms: { command: "python", args: ["-m", "mcp_lms"], env: { API_KEY: "k" } },
      http: { url: "http://127.0.0.1:3001/mcp", enabled_tools: ["*"], tool_timeout: 70 },
      db: { type: "streamableHttp", url: "http://badminton-db:8801/mcp", headers: { "CF-Access-Client-Id": "x" }, enabledTools: ["query"] },
    });
    expect(s.lms).toMatchObject({ command: "python", env: { API_KEY: "k" }, toolTimeout: 30, enabledTools: ["*"], cwd: null, type: null });
    expect(s.http).toMatchObject({ toolTimeout: 70, enabledTools: ["*"] });
    expect(s.db?.headers).toEqual({ "CF-Access-Client-Id": "x" });
  });

  it("refuses an entry with neither command nor url, with both, with a bad url, or a type its fields do not fit, naming the key", () => {
    expect(problems({ a: {} })).toEqual(['tools.mcpServers.a.command: needs a "command" (a stdio server) or a "url" (a remote server)']);
    expect(problems({ b: { command: "x", url: "http://h/mcp" } })[0]).toMatch(/^tools\.mcpServers\.b\.url: has both/);
    expect(problems({ c: { url: "ftp://h/mcp" } })[0]).toMatch(/^tools\.mcpServers\.c\.url: "ftp:\/\/h\/mcp" is not an http\(s\) URL/);
    expect(problems({ d: { type: "sse", command: "x" } })[0]).toMatch(/^tools\.mcpServers\.d\.url: type "sse" needs a "url"/);
    expect(problems({ e: { type: "websocket", url: "http://h/ws" } })[0]).toMatch(/^tools\.mcpServers\.e\.type:/);
  });

  it("infers the transport as nanobot does: /sse is SSE, another url streamable HTTP, a command stdio; type wins", () => {
    const s = servers({
      a: { url: "http://h:1/sse" },
      b: { url: "http://h:1/sse/" },
      c: { url: "http://h:1/mcp" },
      d: { command: "x" },
      e: { type: "sse", url: "http://h:1/events" },
    });
    expect(Object.values(s).map(transportKind)).toEqual(["sse", "sse", "streamableHttp", "stdio", "sse"]);
  });

  it("a stdio server's environment is the safe defaults plus its own env, nothing else of troupe's", () => {
    process.env.TROUPE_UNIT_SECRET = "s";
    try {
      const env = serverEnvironment(servers({ a: { command: "x", env: { MINE: "1" } } }).a!);
      expect(env.MINE).toBe("1");
      expect(env.TROUPE_UNIT_SECRET).toBeUndefined();
      expect(Object.keys(env).every((k) => ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "MINE"].includes(k))).toBe(true);
    } finally {
      delete process.env.TROUPE_UNIT_SECRET;
    }
  });
});

describe("MCP tool names", () => {
  it("sanitises to [a-zA-Z0-9_-] and collapses runs of _", () => {
    expect(sanitizeName("my server.v2/read file")).toBe("my_server_v2_read_file");
    expect(sanitizeName("a__b...c")).toBe("a_b_c");
    expect(mcpToolName("fs", "read-file")).toBe("mcp_fs_read-file");
  });

  it("keeps names at 64 characters, two long names apart", () => {
    const a = toolNameFor(`mcp_server_${"x".repeat(80)}_a`);
    const b = toolNameFor(`mcp_server_${"x".repeat(80)}_b`);
    expect(a).toHaveLength(64);
    expect(a).not.toBe(b);
    expect(toolNameFor("mcp_short")).toBe("mcp_short");
  });

  it("makes clashing sanitised names unique", () => {
    expect(uniqueNames(["mcp_s_a_b", "mcp_s_a_b", "mcp_s_c"])).toEqual(["mcp_s_a_b", "mcp_s_a_b_2", "mcp_s_c"]);
  });

  it("enabledTools: * all, [] none, raw or wrapped names; resources and prompts need * or their own name", () => {
    const all = enabledFilter(["*"]);
    expect(all.tool("x", "mcp_s_x") && all.extra("mcp_s_read_resource")).toBe(true);
    const none = enabledFilter([]);
    expect(none.tool("x", "mcp_s_x") || none.extra("mcp_s_read_resource")).toBe(false);
    const some = enabledFilter(["x", "mcp_s_y", "typo"]);
    expect([some.tool("x", "mcp_s_x"), some.tool("y", "mcp_s_y"), some.tool("z", "mcp_s_z"), some.extra("mcp_s_prompt_p")]).toEqual([true, true, false, false]);
    expect(some.unmatched(["x", "y"], ["mcp_s_x", "mcp_s_y"])).toEqual(["typo"]);
  });
});

describe("MCP input schemas for OpenAI function calling", () => {
  it("adds a missing type: object and properties", () => {
    expect(normalizeInputSchema({})).toEqual({ type: "object", properties: {} });
    expect(normalizeInputSchema(undefined)).toEqual({ type: "object", properties: {} });
  });

  it("turns nullable unions into the type marked nullable, nested too; keeps real unions", () => {
    const out = normalizeInputSchema({
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: {
        a: { type: ["string", "null"] },
        b: { anyOf: [{ type: "integer", minimum: 1 }, { type: "null" }], description: "count" },
        c: { type: "array", items: { oneOf: [{ type: "object", properties: { d: { type: ["number", "null"] } } }, { type: "null" }] } },
        e: { anyOf: [{ type: "string" }, { type: "number" }] },
      },
      required: ["a"],
    });
    expect(out).not.toHaveProperty("$schema");
    const p = out.properties as Record<string, Record<string, unknown>>;
    expect(p.a).toEqual({ type: "string", nullable: true });
    expect(p.b).toEqual({ type: "integer", minimum: 1, description: "count", nullable: true });
    expect(p.c!.items).toEqual({ type: "object", properties: { d: { type: "number", nullable: true } }, nullable: true });
    expect(p.e).toEqual({ anyOf: [{ type: "string" }, { type: "number" }] });
    expect(out.required).toEqual(["a"]);
  });
});

describe("connection loss", () => {
  it("knows the SDK's and the network's words for a dead session", () => {
    expect(isConnectionLoss(new Error("Session terminated"))).toBe(true);
    expect(isConnectionLoss(Object.assign(new TypeError("fetch failed"), { cause: { code: "ECONNREFUSED" } }))).toBe(true);
    expect(isConnectionLoss(new Error("invalid arguments"))).toBe(false);
  });
});

describe("the MCP server machine", () => {
  const policy = { maxRestarts: 2, windowMs: 60_000, baseDelayMs: 5, maxDelayMs: 50 };

  it("connecting → ready → (lost) reconnecting → connecting → ready, reporting each state", async () => {
    const states: string[] = [];
    let lose: (() => void) | undefined;
    const actor = createActor(
      mcpMachine.provide({
        actors: {
          connect: fromPromise(async () => ({ tools: 3 })),
          watch: fromCallback(({ sendBack }) => void (lose = () => sendBack({ type: "lost", error: "Session terminated" }))),
        },
        actions: { report: (_, p) => void states.push(p.state) },
      }),
      { input: { name: "s", policy } },
    ).start();
    await until(() => actor.getSnapshot().value === "ready", 5_000, "ready");
    expect(actor.getSnapshot().context.tools).toBe(3);
    lose!();
    await until(() => states.length >= 5, 5_000, "ready again");
    expect(states).toEqual(["connecting", "ready", "reconnecting", "connecting", "ready"]);
    expect(actor.getSnapshot().value).toBe("ready");
    expect(actor.getSnapshot().context.lastError).toBe("Session terminated");
    actor.stop();
  });

  it("past the intensity limit it stays failed with the last error", async () => {
    let attempts = 0;
    const actor = createActor(
      mcpMachine.provide({
        actors: {
          connect: fromPromise<{ tools: number }, { name: string }>(async () => {
            attempts++;
            throw new Error(`spawn ENOENT (${attempts})`);
          }),
        },
      }),
      { input: { name: "s", policy } },
    ).start();
    await until(() => actor.getSnapshot().value === "failed", 5_000, "failed");
    expect(attempts).toBe(3);
    expect(actor.getSnapshot().context.lastError).toBe("spawn ENOENT (3)");
    actor.stop();
  });

  it("the supervisor spawns mcp:<name> and marks it failed when it gives up, without stopping the rest", () => {
    const failed: string[] = [];
    const actor = createActor(
      supervisorMachine.provide({
        actors: { mcp: fromCallback(() => {}) as never },
        actions: { childFailed: (_, p) => void failed.push(`${p.id}: ${p.error}`) },
      }),
      { input: { sessionIdleMs: 60_000 } },
    ).start();
    actor.send({ type: "mcp.start", name: "fs", input: { name: "fs" } });
    actor.send({ type: "mcp.start", name: "web", input: { name: "web" } });
    expect(Object.keys(actor.getSnapshot().children).sort()).toEqual(["mcp:fs", "mcp:web"]);
    actor.send({ type: "child.failed", id: "mcp:fs", error: "spawn ENOENT" });
    expect(actor.getSnapshot().context.children["mcp:fs"]).toMatchObject({ kind: "mcp", status: "failed", lastError: "spawn ENOENT" });
    expect(actor.getSnapshot().context.children["mcp:web"]?.status).toBe("running");
    expect(failed).toEqual(["mcp:fs: spawn ENOENT"]);
    actor.stop();
  });
});
