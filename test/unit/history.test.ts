import { describe, expect, it } from "vitest";
import { LOST_TOOL_RESULT, repairHistory, repairInFull } from "../../src/providers/history.js";
import type { ChatMessage } from "../../src/providers/messages.js";

const call = (id: string, name = "exec") => ({ id, type: "function" as const, function: { name, arguments: "{}" } });

describe("repairHistory", () => {
  it("leaves a well-formed history as it is", () => {
    const h: ChatMessage[] = [
      { role: "system", content: "s" },
      { role: "user", content: "u" },
      { role: "assistant", content: null, tool_calls: [call("a"), call("b")] },
      { role: "tool", tool_call_id: "a", content: "1" },
      { role: "tool", tool_call_id: "b", content: "2" },
      { role: "assistant", content: "done" },
    ];
    expect(repairHistory(h)).toEqual(h);
  });

  it("back-fills calls left without a result (a turn that died mid-tools), before the next message", () => {
    const h: ChatMessage[] = [
      { role: "user", content: "u" },
      { role: "assistant", content: null, tool_calls: [call("a"), call("b", "write_file")] },
      { role: "tool", tool_call_id: "a", content: "1" },
      { role: "user", content: "next" },
    ];
    expect(repairHistory(h)).toEqual([
      h[0],
      h[1],
      h[2],
      { role: "tool", tool_call_id: "b", name: "write_file", content: LOST_TOOL_RESULT },
      h[3],
    ]);
    // At the very end too.
    expect(repairHistory(h.slice(0, 2)).slice(2).map((m) => (m.role === "tool" ? m.tool_call_id : m.role))).toEqual(["a", "b"]);
  });

  it("drops orphan results: no call asked for them, or their call was already answered", () => {
    const h: ChatMessage[] = [
      { role: "tool", tool_call_id: "ghost", content: "x" },
      { role: "user", content: "u" },
      { role: "assistant", content: null, tool_calls: [call("a")] },
      { role: "tool", tool_call_id: "a", content: "1" },
      { role: "tool", tool_call_id: "a", content: "again" },
      { role: "assistant", content: "ok" },
      { role: "tool", tool_call_id: "a", content: "late" },
    ];
    expect(repairHistory(h)).toEqual([h[1], h[2], h[3], h[5]]);
  });

  it("handles a call id reused by a later response as a new call", () => {
    const h: ChatMessage[] = [
      { role: "user", content: "u" },
      { role: "assistant", content: null, tool_calls: [call("call_0")] },
      { role: "tool", tool_call_id: "call_0", content: "1" },
      { role: "assistant", content: null, tool_calls: [call("call_0")] },
      { role: "tool", tool_call_id: "call_0", content: "2" },
      { role: "assistant", content: "ok" },
    ];
    expect(repairHistory(h)).toEqual(h);
  });
});

describe("repairHistory on a history that needs nothing", () => {
  it("gives what the full pass gives, for well-formed and damaged histories alike (seeded random)", () => {
    let seed = 7;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    for (let round = 0; round < 500; round++) {
      const messages: ChatMessage[] = [];
      for (let k = 0; k < 12; k++) {
        const pick = rand(6);
        if (pick === 0) messages.push({ role: "user", content: `u${k}` });
        else if (pick === 1) messages.push({ role: "assistant", content: `a${k}` });
        else if (pick === 2) {
          const ids = Array.from({ length: 1 + rand(3) }, () => `c${rand(4)}`);
          messages.push({ role: "assistant", content: null, tool_calls: ids.map((id) => ({ id, type: "function" as const, function: { name: "f", arguments: "{}" } })) });
          // Mostly answered in order, sometimes not, or not all.
          const answers = rand(4) === 0 ? [...ids].reverse() : rand(5) === 0 ? ids.slice(1) : ids;
          for (const id of answers) messages.push({ role: "tool", tool_call_id: id, name: "f", content: "r" });
        } else messages.push({ role: "tool", tool_call_id: `c${rand(4)}`, name: "f", content: "orphan?" });
      }
      expect(repairHistory(messages)).toEqual(repairInFull(messages));
    }
  });
});
