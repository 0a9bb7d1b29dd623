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

  it("checks each list in full when it is laid beside the well-formed ones checked before: a result dropped, moved or added in a kept stretch is still repaired", () => {
    // One long session's lists call after call: new head, window cut at its start, grown at its end, then damaged somewhere.
    const made: ChatMessage[] = [];
    const turn = (t: number) => {
      made.push({ role: "user", content: `u${t}` });
      made.push({ role: "assistant", content: null, tool_calls: [call(`a${t}`), call(`b${t}`)] });
      made.push({ role: "tool", tool_call_id: `a${t}`, content: "1" });
      made.push({ role: "tool", tool_call_id: `b${t}`, content: "2" });
      made.push({ role: "assistant", content: `done ${t}` });
    };
    const damages: Array<(h: ChatMessage[]) => void> = [
      () => undefined,
      (h) => h.splice(h.findLastIndex((m) => m.role === "tool"), 1), // the newest call's last result lost
      (h) => h.splice(h.findIndex((m) => m.role === "tool"), 1), // the oldest call's first result lost
      (h) => h.splice(h.length >> 1, 0, { role: "tool", tool_call_id: "orphan", content: "x" }), // an orphan in the middle
      (h) => h.splice(-2), // ends right after a result: the call's other result never came
      (h) => h.splice(h.findIndex((m) => m.role === "assistant" && m.tool_calls) + 4, 0, { ...h[h.findIndex((m) => m.role === "tool")]! }), // a result twice
      (h) => { const i = h.findLastIndex((m) => m.role === "tool"); [h[i - 1], h[i]] = [h[i]!, h[i - 1]!]; }, // answers swapped: well formed too (kept as they are)
    ];
    for (let t = 0; t < 60; t++) {
      turn(t);
      const list: ChatMessage[] = [{ role: "system", content: `s${t}` }, ...made.slice(Math.max(0, made.length - 40 - (t % 3) * 5))];
      while (list[1]?.role !== "user") list.splice(1, 1);
      // Well formed first (kept), then the same list damaged one way.
      expect(repairHistory(list)).toEqual(list);
      const damaged = list.slice();
      damages[t % damages.length]!(damaged);
      expect(repairHistory(damaged)).toEqual(repairInFull(damaged));
      if (t % damages.length && t % damages.length < 6) expect(repairHistory(damaged), `damage ${t % damages.length}`).not.toEqual(damaged);
    }
  });
});
