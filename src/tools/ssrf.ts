import type * as Dns from "node:dns";
import type { LookupAddress } from "node:dns";
import { isIP, type LookupFunction } from "node:net";
import ipaddr from "ipaddr.js";
import { lazyRequire } from "../builtin.js";
import { ToolError } from "./contract.js";

/** Refused because the address is not public: the server-side request forgery guard. */
export class SsrfError extends ToolError {}

const RANGE_WORDS: Record<string, string> = {
  loopback: "a loopback address",
  private: "a private-network address",
  linkLocal: "a link-local address (cloud metadata lives here)",
  uniqueLocal: "a private IPv6 address",
  carrierGradeNat: "a carrier-grade NAT address (some cloud metadata lives here)",
  unspecified: "the unspecified address",
  multicast: "a multicast address",
  broadcast: "the broadcast address",
  reserved: "a reserved address",
};

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

export interface SsrfGuard {
  /** Why this IP may not be reached, or undefined when it is public or whitelisted. */
  blocked(ip: string): string | undefined;
  /** Checks a URL's scheme and every address its host resolves to. */
  assertPublicUrl(url: URL): Promise<void>;
  /** A net lookup that refuses non-public answers at connect time (no DNS-rebinding window). */
  lookup: LookupFunction;
}

/** tools.ssrfWhitelist entries: CIDRs ("10.0.0.0/8") or single addresses. */
export function parseWhitelist(entries: string[]): Cidr[] {
  return entries.map((entry) => {
    if (entry.includes("/")) return ipaddr.parseCIDR(entry);
    const ip = ipaddr.process(entry);
    return [ip, ip.kind() === "ipv4" ? 32 : 128];
  });
}

/** How names are resolved (node's dns.lookup; tests hand in their own answers). */
export type Resolver = (hostname: string, options: { all: true }, callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

/** Loaded at the first lookup: building the tools does not resolve anything. */
const dns = lazyRequire<typeof Dns>("node:dns");
const dnsLookup: Resolver = (hostname, options, callback) => dns().lookup(hostname, options, callback);

export function createSsrfGuard(whitelist: string[] = [], resolver: Resolver = dnsLookup): SsrfGuard {
  const allowed = parseWhitelist(whitelist);
  const blocked = (ip: string) => {
    if (!ipaddr.isValid(ip)) return "not a valid IP address";
    const addr = ipaddr.process(ip);
    if (allowed.some(([net, bits]) => net.kind() === addr.kind() && addr.match(net, bits))) return undefined;
    const range = addr.range();
    if (range === "unicast") return undefined;
    return RANGE_WORDS[range] ?? `a non-public address (${range})`;
  };
  const refuse = (host: string, ip: string, why: string) =>
    new SsrfError(
      `refused to fetch ${host}${host === ip ? "" : ` (${ip})`}: it is ${why}. ` +
        "Only public addresses can be fetched; add it to tools.ssrfWhitelist if this is deliberate.",
    );

  const lookup: LookupFunction = (hostname, options, callback) => {
    resolver(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, "", 4);
      for (const a of addresses) {
        const why = blocked(a.address);
        if (why) return callback(refuse(hostname, a.address, why), "", 4);
      }
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      const first = addresses[0];
      if (!first) return callback(new Error(`no address for ${hostname}`), "", 4);
      callback(null, first.address, first.family);
    });
  };

  return {
    blocked,
    lookup,
    async assertPublicUrl(url) {
      if (url.protocol !== "http:" && url.protocol !== "https:") {
        throw new SsrfError(`only http and https URLs can be fetched, not ${url.protocol.replace(":", "")}`);
      }
      const host = url.hostname.replace(/^\[|\]$/g, "");
      if (isIP(host)) {
        const why = blocked(host);
        if (why) throw refuse(host, host, why);
        return;
      }
      await new Promise<void>((resolve, reject) =>
        lookup(host, { all: true }, (err) => (err ? reject(err instanceof ToolError ? err : new ToolError(`cannot resolve ${host}: ${err.message}`)) : resolve())),
      );
    },
  };
}
