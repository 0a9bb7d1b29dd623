import { Writable } from "node:stream";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { LOOPBACK_WHITELIST, parseServers, startHub } from "../helpers/mcp.js";
import { until } from "../helpers/wait.js";
import { createMcpHub, type McpHub } from "../../src/mcp/hub.js";
import { createToolRegistry } from "../../src/tools/registry.js";
import { closedPort } from "../helpers/ports.js";

/**
 * Why a server could not be reached, as the user sees it (`troupe mcp list`, the log, the server
 * actor's lastError). nanobot lets a stdio server's stderr through to the terminal and names an
 * HTTP server that is not listening as unreachable (tests/tools/test_mcp_probe.py, a closed port).
 */

const hubs: McpHub[] = [];
afterEach(async () => {
  await Promise.all(hubs.splice(0).map((h) => h.close()));
});

/** A debug-level logger whose lines are kept. */
function keptLog() {
  const lines: Array<{ msg: string; [k: string]: unknown }> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as { msg: string });
      done();
    },
  });
  return { lines, logger: pino({ level: "debug" }, stream) };
}

/** A hub whose log lines are kept, and the error its one connection attempt ends with. */
async function failedConnect(servers: Record<string, Record<string, unknown>>, secrets: string[] = []) {
  const { lines, logger } = keptLog();
  const hub = createMcpHub({ servers: parseServers(servers), registry: createToolRegistry(), logger, connectTimeoutMs: 20_000, secrets, ssrfWhitelist: LOOPBACK_WHITELIST });
  hubs.push(hub);
  const [name] = hub.names();
  const error = await hub.connect(name!).then(
    () => undefined,
    (err: Error) => err,
  );
  return { hub, lines, error: error! };
}


describe("an MCP server that cannot be started or reached", () => {
  it("a stdio server that exits at start: its exit code and last stderr lines, not 'Connection closed'", async () => {
    const { error } = await failedConnect({ bad: { command: "sh", args: ["-c", "echo starting >&2; echo fatal: BASE_DIR missing >&2; exit 1"] } });
    expect(error.message).toMatch(/^exited with code 1: starting \| fatal: BASE_DIR missing$/);
  });

  it("the last line needs no newline; only the last few lines are kept; stack frames are left out; a signal is named", async () => {
    const many = Array.from({ length: 20 }, (_, i) => `echo line${i} >&2`).join("; ");
    const { error } = await failedConnect({ bad: { command: "sh", args: ["-c", `${many}; echo '    at main (/srv/x.js:1:1)' >&2; printf 'no newline' >&2; exit 3`] } });
    expect(error.message).toBe("exited with code 3: line18 | line19 | no newline");
    const killed = await failedConnect({ bad: { command: "sh", args: ["-c", "kill -9 $$"] } });
    expect(killed.error.message).toBe("was killed by SIGKILL");
  });

  it("secrets on its stderr are redacted as the logs redact them: the server's own env credentials, the config's keys, key shapes", async () => {
    const script = 'echo "token $API_TOKEN key sk-abcdefghijklmnop provider prov-secret-123" >&2; exit 2';
    const { error } = await failedConnect({ bad: { command: "sh", args: ["-c", script], env: { API_TOKEN: "tok-very-secret" } } }, ["prov-secret-123"]);
    expect(error.message).toBe("exited with code 2: token [REDACTED] key [REDACTED] provider [REDACTED]");
  });

  it("its actor's lastError and the log's warning carry the reason", async () => {
    const { lines, logger } = keptLog();
    const h = startHub({ bad: { command: "sh", args: ["-c", "echo fatal: BASE_DIR missing >&2; exit 1"] } }, { logger, policy: { maxRestarts: 0 } });
    try {
      await until(() => h.state("bad") === "failed", 30_000, "bad to fail");
      expect(h.hub.status()[0]!.lastError).toBe("exited with code 1: fatal: BASE_DIR missing");
      expect(h.actors[0]!.getSnapshot().context.lastError).toBe("exited with code 1: fatal: BASE_DIR missing");
      expect(h.hub.note()).toContain("- bad: failed (last error: exited with code 1: fatal: BASE_DIR missing)");
      expect(lines).toContainEqual(expect.objectContaining({ level: 50, server: "bad", error: "exited with code 1: fatal: BASE_DIR missing" }));
    } finally {
      await h.stop();
    }
  });

  it.each(["streamableHttp", "sse"])("an HTTP server (%s) with nothing listening: connection refused at its URL, not 'fetch failed'", async (type) => {
    const port = await closedPort();
    const path = type === "sse" ? "sse" : "mcp";
    const { error, lines } = await failedConnect({ web: { url: `http://127.0.0.1:${port}/${path}?token=abc`, type } });
    // The URL as shown: no query, where a token may hide (nanobot's _redact_url drops it too).
    expect(error.message).toBe(`connection refused at http://127.0.0.1:${port}/${path}`);
    expect(JSON.stringify(lines)).not.toContain("token=abc");
  });

  it("a fetch that fails for another reason names that reason, not 'fetch failed'", async () => {
    // Port 9 is one fetch refuses to use.
    const { error } = await failedConnect({ web: { url: "http://127.0.0.1:9/mcp" } });
    expect(error.message).toBe("could not connect to http://127.0.0.1:9/mcp (bad port)");
  });
});
