import { networkInterfaces } from "node:os";
import { describe, expect, it } from "vitest";
import { allowedHosts, exposedControlApi, hostAllowed } from "../../src/server/host-check.js";

describe("control API Host check", () => {
  it("a loopback bind answers its own name and the loopback names, with its port, in any case", () => {
    for (const bind of ["127.0.0.1", "localhost", "::1"]) {
      const allowed = allowedHosts(bind, 18790);
      for (const host of ["127.0.0.1:18790", "localhost:18790", "LocalHost:18790", "[::1]:18790"]) expect(hostAllowed(allowed, host), `${bind} ${host}`).toBe(true);
      for (const host of ["evil.example:18790", "evil.example", "127.0.0.1", "127.0.0.1:80", "localhost:18791", "127.0.0.2:18790", "localhost.:18790", "", undefined]) {
        expect(hostAllowed(allowed, host), `${bind} ${String(host)}`).toBe(false);
      }
    }
  });

  it("another bind answers only its own name", () => {
    const allowed = allowedHosts("troupe.lan", 8080);
    expect(hostAllowed(allowed, "troupe.lan:8080")).toBe(true);
    expect(hostAllowed(allowed, "localhost:8080")).toBe(false);
    expect(hostAllowed(allowed, "127.0.0.1:8080")).toBe(false);
  });

  it("port 80 may be left out of Host, as clients do", () => {
    const allowed = allowedHosts("127.0.0.1", 80);
    expect(hostAllowed(allowed, "127.0.0.1")).toBe(true);
    expect(hostAllowed(allowed, "localhost:80")).toBe(true);
    expect(hostAllowed(allowed, "evil.example")).toBe(false);
  });

  it("a wildcard bind answers the loopback names and the machine's addresses, never another name", () => {
    const allowed = allowedHosts("0.0.0.0", 9000);
    expect(hostAllowed(allowed, "0.0.0.0:9000")).toBe(true);
    expect(hostAllowed(allowed, "localhost:9000")).toBe(true);
    const v4 = Object.values(networkInterfaces()).flat().find((a) => a?.family === "IPv4");
    if (v4) expect(hostAllowed(allowed, `${v4.address}:9000`)).toBe(true);
    expect(hostAllowed(allowed, "evil.example:9000")).toBe(false);
    expect(hostAllowed(allowedHosts("::", 9000), "[::]:9000")).toBe(true);
  });

  it("a bind off loopback is named as reachable from other machines, with the fix; a loopback bind is not", () => {
    // nanobot refuses its API server on a wildcard host without a key (tests/config/test_config_load_errors.py:
    // test_api_config_requires_key_for_wildcard_hosts, hosts "0.0.0.0" and "::"); troupe's control API always
    // needs its token, so such a bind is a warning, not an error.
    for (const host of ["0.0.0.0", "::", "192.168.1.5", "troupe.lan"]) {
      const r = exposedControlApi(host, "/h/gateway.token");
      expect(r?.why, host).toBe(`gateway.host is ${host}, not a loopback address: the control API is reachable from other machines (each request still needs the token in /h/gateway.token)`);
      expect(r?.fix, host).toBe("set gateway.host to 127.0.0.1 unless you mean that");
    }
    for (const host of ["127.0.0.1", "127.0.1.1", "localhost", "::1", "[::1]"]) expect(exposedControlApi(host, "/t"), host).toBeUndefined();
  });
});
