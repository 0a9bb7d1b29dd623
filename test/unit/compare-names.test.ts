import { describe, expect, it } from "vitest";
import { compareNames } from "../../src/compare-names.js";

const sign = (n: number) => Math.sign(n);

describe("compareNames", () => {
  it("orders names as localeCompare does", () => {
    const alphabet = "_-:.09azAZé ~/";
    // A fixed pseudo-random sequence: the same cases every run.
    let seed = 12345;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const word = () => Array.from({ length: Math.floor(next() * 6) }, () => alphabet[Math.floor(next() * alphabet.length)]).join("");
    for (let i = 0; i < 20_000; i++) {
      const a = word();
      const b = next() < 0.3 ? a + word() : word();
      expect(sign(compareNames(a, b)), `${JSON.stringify(a)} vs ${JSON.stringify(b)}`).toBe(sign(a.localeCompare(b)));
      expect(sign(compareNames(b, a))).toBe(sign(b.localeCompare(a)));
    }
  });

  it("sorts skill and tool names as localeCompare does", () => {
    const names = ["web_search", "skill-creator", "clawhub", "cron", "a_b", "a-b", "a.b", "a:b", "a0", "ab", "a", "mcp_fx_echo", "list_dir", "exec", "Zeta", "zeta", "éclair"];
    expect([...names].sort(compareNames)).toEqual([...names].sort((a, b) => a.localeCompare(b)));
  });
});
