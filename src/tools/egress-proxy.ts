import { mkdtempSync, rmSync } from "node:fs";
import { createServer, request, type IncomingMessage, type ServerResponse } from "node:http";
import { connect, isIP, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SsrfGuard } from "./ssrf.js";

/**
 * The only way out of exec's sandbox: an HTTP proxy (plain requests and CONNECT tunnels) on a unix
 * socket that the sandbox sees, which refuses internal addresses exactly as web_fetch does. The
 * sandbox has its own network namespace with nothing but loopback, so a program that ignores the
 * proxy variables reaches nothing at all.
 */
export interface EgressProxy {
  socketPath: string;
  close(): void;
}

/** Why `host` may not be reached when it is an address literal (names are checked at connect time by the guard's lookup). */
const literalRefusal = (guard: SsrfGuard, host: string) => {
  const bare = host.replace(/^\[|\]$/g, "");
  return isIP(bare) ? guard.blocked(bare) : undefined;
};

const refusedText = (host: string, why: string) =>
  `troupe refused to connect to ${host}: it is ${why}. Commands may reach only public addresses; add it to tools.ssrfWhitelist if this is deliberate.\n`;

function forward(guard: SsrfGuard, req: IncomingMessage, res: ServerResponse) {
  let url: URL;
  try {
    url = new URL(req.url ?? "");
  } catch {
    res.writeHead(400).end("troupe's egress proxy takes absolute http:// URLs\n");
    return;
  }
  if (url.protocol !== "http:") {
    res.writeHead(400).end(`troupe's egress proxy forwards http:// requests (https goes through CONNECT), not ${url.protocol}\n`);
    return;
  }
  const why = literalRefusal(guard, url.hostname);
  if (why) {
    res.writeHead(403).end(refusedText(url.hostname, why));
    return;
  }
  const upstream = request(
    { hostname: url.hostname.replace(/^\[|\]$/g, ""), port: url.port || 80, path: `${url.pathname}${url.search}`, method: req.method, headers: req.headers, lookup: guard.lookup },
    (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    },
  );
  upstream.on("error", (err) => {
    if (!res.headersSent) res.writeHead(/refused to fetch/.test(err.message) ? 403 : 502);
    res.end(`${err.message}\n`);
  });
  req.pipe(upstream);
}

function tunnel(guard: SsrfGuard, req: IncomingMessage, client: Socket, head: Buffer) {
  const target = req.url ?? "";
  const split = target.lastIndexOf(":");
  const host = split > 0 ? target.slice(0, split).replace(/^\[|\]$/g, "") : "";
  const port = Number(target.slice(split + 1));
  const fail = (status: string, text: string) => client.end(`HTTP/1.1 ${status}\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n${text}`);
  if (!host || !Number.isInteger(port) || port < 1 || port > 65535) return fail("400 Bad Request", "CONNECT takes host:port\n");
  const why = literalRefusal(guard, host);
  if (why) return fail("403 Forbidden", refusedText(host, why));
  const upstream = connect({ host, port, lookup: guard.lookup }, () => {
    client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    if (head.length) upstream.write(head);
    upstream.pipe(client).pipe(upstream);
  });
  upstream.on("error", (err) => (client.writable ? fail(/refused to fetch/.test(err.message) ? "403 Forbidden" : "502 Bad Gateway", `${err.message}\n`) : undefined));
  client.on("error", () => upstream.destroy());
}

export async function startEgressProxy(guard: SsrfGuard): Promise<EgressProxy> {
  const dir = mkdtempSync(join(tmpdir(), "troupe-egress-"));
  const socketPath = join(dir, "egress.sock");
  const server = createServer((req, res) => forward(guard, req, res));
  server.on("connect", (req: IncomingMessage, client: Socket, head: Buffer) => tunnel(guard, req, client, head));
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(socketPath, resolve));
  // It serves exec calls for the daemon's whole life, but never keeps the process alive by itself.
  server.unref();
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  process.once("exit", cleanup);
  return {
    socketPath,
    close() {
      server.close();
      process.off("exit", cleanup);
      cleanup();
    },
  };
}

/** Where the sandbox sees the proxy's socket (its /tmp is private). */
export const EGRESS_SOCKET_INSIDE = "/tmp/.troupe-egress.sock";

/**
 * Runs inside the sandbox (node -e): listens on loopback, pipes every connection to the proxy's
 * socket, and runs the command with the proxy variables pointing there. Exits with its exit code.
 */
export const EGRESS_FORWARDER = `
const net = require("net"), { spawn } = require("child_process");
const [sock, ...cmd] = process.argv.slice(1);
const server = net.createServer((c) => {
  const u = net.connect(sock);
  c.pipe(u).pipe(c);
  u.on("error", () => c.destroy());
  c.on("error", () => u.destroy());
});
server.listen(0, "127.0.0.1", () => {
  const p = "http://127.0.0.1:" + server.address().port;
  const env = { ...process.env, HTTP_PROXY: p, HTTPS_PROXY: p, http_proxy: p, https_proxy: p, ALL_PROXY: p, all_proxy: p };
  const child = spawn(cmd[0], cmd.slice(1), { stdio: "inherit", env });
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
});`;
