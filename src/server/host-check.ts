import { networkInterfaces } from "node:os";
import ipaddr from "ipaddr.js";

const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "[::1]"];

/** Whether a host is reachable from this machine only (127.0.0.0/8, ::1, localhost). */
export function isLoopback(host: string): boolean {
  if (host === "localhost") return true;
  const bare = host.replace(/^\[|\]$/g, "");
  return ipaddr.isValid(bare) && ipaddr.process(bare).range() === "loopback";
}

/**
 * What binding the control API off loopback means, and the fix, for `troupe gateway`, `status` and
 * `doctor`; undefined for a loopback host. A warning, not an error: every request needs the token.
 */
export function exposedControlApi(host: string, tokenFile: string): { why: string; fix: string } | undefined {
  if (isLoopback(host)) return undefined;
  return {
    why: `gateway.host is ${host}, not a loopback address: the control API is reachable from other machines (each request still needs the token in ${tokenFile})`,
    fix: "set gateway.host to 127.0.0.1 unless you mean that",
  };
}
const isWildcard = (host: string) => host === "0.0.0.0" || host === "::" || host === "";
const bracketed = (host: string) => (host.includes(":") ? `[${host}]` : host);

/**
 * The Host header values the control API answers: its configured host with its port; for a
 * loopback bind also localhost, 127.0.0.1 and [::1]; for a wildcard bind those and the machine's
 * own addresses. A web page cannot reach it through a name it controls: after DNS rebinding
 * (evil.example re-pointed at 127.0.0.1) the browser still sends `Host: evil.example`, and is refused.
 */
export function allowedHosts(bindHost: string, port: number): Set<string> {
  const names = new Set([bracketed(bindHost)]);
  if (isLoopback(bindHost) || isWildcard(bindHost)) for (const name of LOOPBACK_NAMES) names.add(name);
  if (isWildcard(bindHost)) for (const addrs of Object.values(networkInterfaces())) for (const a of addrs ?? []) names.add(bracketed(a.address));
  const withPort = [...names].map((name) => `${name.toLowerCase()}:${port}`);
  // A client leaves the port out of Host when it is the scheme's default.
  return new Set(port === 80 ? [...withPort, ...[...names].map((name) => name.toLowerCase())] : withPort);
}

export const hostAllowed = (allowed: Set<string>, header: string | undefined) => header !== undefined && allowed.has(header.toLowerCase());
