import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { execTool } from "../../src/tools/builtin/exec.js";
import { compilePatterns, DEFAULT_DENY_PATTERNS } from "../../src/tools/builtin/exec-guard.js";
import { startEgressProxy, type EgressProxy } from "../../src/tools/egress-proxy.js";
import { createSsrfGuard } from "../../src/tools/ssrf.js";
import { requireBwrap, SKIP_BWRAP } from "../helpers/bwrap.js";
import { useTempDirs } from "../helpers/tmp.js";
import { runner, sandboxOf } from "../helpers/tools.js";

/**
 * exec's network in the sandbox: its own namespace with only loopback, and the egress proxy as the
 * one way out, refusing internal addresses as web_fetch does. A server on 127.0.0.1 stands in for
 * an internal service (refused) and, once whitelisted, for a public one (reached through the proxy).
 */
describe.skipIf(SKIP_BWRAP)("exec sandbox network: only through the egress proxy", () => {
  const tmp = useTempDirs();
  let server: Server | undefined;
  let proxy: EgressProxy | undefined;
  afterEach(async () => {
    proxy?.close();
    proxy = undefined;
    await new Promise((r) => (server ? server.close(r) : r(undefined)));
    server = undefined;
  });

  async function setup(whitelist: string[]) {
    const bin = requireBwrap();
    const root = await tmp();
    const ws = join(root, "workspace");
    const { mkdir } = await import("node:fs/promises");
    await mkdir(ws);
    const hits: string[] = [];
    server = createServer((req, res) => {
      hits.push(req.url ?? "");
      res.end("internal service says hello");
    });
    await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
    const port = (server.address() as AddressInfo).port;
    proxy = await startEgressProxy(createSsrfGuard(whitelist));
    const socket = proxy.socketPath;
    const tool = execTool({
      sandbox: sandboxOf(ws),
      policy: { deny: compilePatterns(DEFAULT_DENY_PATTERNS), allow: [], restrict: true, roots: [ws] },
      defaultTimeout: 30,
      pathAppend: "",
      allowedEnvKeys: [],
      env: { PATH: process.env.PATH, HOME: root, LANG: "C.UTF-8" },
      isolation: { kind: "bwrap", bin, hide: [root], readable: [], egress: async () => socket, node: process.execPath },
    });
    return { port, hits, run: runner([tool], ws) };
  }

  it("an internal address is refused by the proxy, and nothing bypasses it", async () => {
    const { port, hits, run } = await setup([]);
    const viaProxy = await run("exec", { command: `curl -sS -w ' status=%{http_code}' http://127.0.0.1:${port}/secret` });
    expect(viaProxy).toMatch(/troupe refused to connect to 127\.0\.0\.1: it is a loopback address/);
    expect(viaProxy).toMatch(/status=403/);
    const tunnelled = await run("exec", { command: `curl -sS -p http://127.0.0.1:${port}/secret; echo " exit=$?"` });
    expect(tunnelled).toMatch(/exit=(56|7)/);
    const direct = await run("exec", { command: `curl -sS --noproxy '*' http://127.0.0.1:${port}/secret; echo " exit=$?"` });
    expect(direct).toMatch(/exit=7/);
    const raw = await run("exec", {
      command: `python3 -c "import socket; socket.create_connection(('127.0.0.1', ${port}), 3)" 2>&1 | tail -1; echo done`,
    });
    expect(raw).toMatch(/ConnectionRefusedError|Network is unreachable|OSError/);
    expect(hits).toEqual([]);
  });

  it("an allowed address is reached through the proxy, plain and tunnelled", async () => {
    const { port, hits, run } = await setup(["127.0.0.1/32"]);
    const plain = await run("exec", { command: `curl -sS http://127.0.0.1:${port}/plain` });
    expect(plain).toMatch(/internal service says hello/);
    const tunnelled = await run("exec", { command: `curl -sS -p http://127.0.0.1:${port}/tunnel` });
    expect(tunnelled).toMatch(/internal service says hello/);
    expect(hits).toEqual(["/plain", "/tunnel"]);
  });
});
