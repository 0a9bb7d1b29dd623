import { describe, expect, it } from "vitest";
import { describeNetworkError, isCertificateError } from "../../src/net-errors.js";
import { isRetryable } from "../../src/providers/retry.js";

/** Node's error for a TLS or socket failure, wrapped as fetch (MCP's transports) wraps it: "fetch failed", the cause holding the code. */
const wrapped = (code: string, message: string) => new TypeError("fetch failed", { cause: Object.assign(new Error(message), { code }) });

describe("a certificate the client rejects is not a server that is down", () => {
  it("an untrusted certificate says the server is up and how to trust it, wherever the code sits in the causes", () => {
    for (const [code, message] of [
      ["DEPTH_ZERO_SELF_SIGNED_CERT", "self-signed certificate"],
      ["SELF_SIGNED_CERT_IN_CHAIN", "self-signed certificate in certificate chain"],
      ["UNABLE_TO_GET_ISSUER_CERT_LOCALLY", "unable to get local issuer certificate"],
      ["UNABLE_TO_VERIFY_LEAF_SIGNATURE", "unable to verify the first certificate"],
    ]) {
      const said = describeNetworkError(wrapped(code!, message!), "https://mcp.lan/mcp");
      expect(said, code).toBe(
        `https://mcp.lan/mcp is up, but its TLS certificate is not trusted here (${message}): ` +
          "if you trust it, give its CA certificate (a PEM file) in NODE_EXTRA_CA_CERTS, or add it to the system store and set NODE_OPTIONS=--use-openssl-ca",
      );
      expect(said).not.toMatch(/could not connect|is the server up/);
    }
  });

  it("an expired certificate or one for another name says so, with the fix on the server's side", () => {
    expect(describeNetworkError(wrapped("CERT_HAS_EXPIRED", "certificate has expired"), "https://m.example/v1")).toBe(
      "https://m.example/v1 is up, but its TLS certificate has expired (certificate has expired): renew it on the server, or check this machine's clock",
    );
    const altname = "Hostname/IP does not match certificate's altnames: IP: 10.0.0.2 is not in the cert's list: 127.0.0.1";
    expect(describeNetworkError(wrapped("ERR_TLS_CERT_ALTNAME_INVALID", altname), "https://10.0.0.2/v1")).toBe(
      `https://10.0.0.2/v1 is up, but its TLS certificate is for another name (${altname}): use a name the certificate lists in the URL`,
    );
  });

  it("a rejected certificate is not retried; a refused or reset connection still is", () => {
    expect(isCertificateError(wrapped("DEPTH_ZERO_SELF_SIGNED_CERT", "self-signed certificate"))).toBe(true);
    expect(isRetryable(Object.assign(new Error("self-signed certificate"), { code: "DEPTH_ZERO_SELF_SIGNED_CERT" }))).toBe(false);
    expect(isRetryable(Object.assign(new Error("certificate has expired"), { code: "CERT_HAS_EXPIRED" }))).toBe(false);
    expect(isCertificateError(wrapped("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:1"))).toBe(false);
    expect(isRetryable(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }))).toBe(true);
    expect(describeNetworkError(wrapped("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:1"), "http://127.0.0.1:1/v1")).toBe("connection refused at http://127.0.0.1:1/v1");
  });
});
