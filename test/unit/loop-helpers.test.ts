import { describe, expect, it } from "vitest";
import { mergeConsecutiveUsers, repairHistory } from "../../src/providers/history.js";
import type { ParsedToolCall } from "../../src/providers/messages.js";
import { lookupSignature, repeatedLookups } from "../../src/tools/repeated-lookup.js";

const call = (name: string, args: Record<string, unknown>): ParsedToolCall => ({ id: "x", name, rawArguments: JSON.stringify(args), arguments: args });

describe("repeated outside lookups (nanobot's external_lookup_signature)", () => {
  it("names web_fetch by URL and web_search by query, case- and space-insensitively; nothing else", () => {
    expect(lookupSignature("web_fetch", { url: " https://Example.com/A " })).toBe("web_fetch:https://example.com/a");
    expect(lookupSignature("web_search", { query: "Node 20 LTS" })).toBe("web_search:node 20 lts");
    expect(lookupSignature("web_search", { search_term: "x" })).toBe("web_search:x");
    expect(lookupSignature("web_fetch", { url: "" })).toBeUndefined();
    expect(lookupSignature("read_file", { path: "a" })).toBeUndefined();
    expect(lookupSignature("web_fetch", null)).toBeUndefined();
  });

  it("lets two through per turn and blocks the third, counting earlier responses and this one in order", () => {
    const q = (query: string) => call("web_search", { query });
    expect([...repeatedLookups([], [q("a"), q("a"), q("a"), q("b")])]).toEqual([2]);
    expect([...repeatedLookups([{ name: "web_search", args: { query: "A" } }, { name: "web_search", args: { query: "a" } }], [q("b"), q("a")])]).toEqual([1]);
    expect([...repeatedLookups([{ name: "web_fetch", args: { url: "a" } }], [q("a"), q("a")])]).toEqual([]);
  });
});

describe("history sent to the model", () => {
  it("never has two user messages in a row: the later one is merged into the earlier (text or parts)", () => {
    expect(
      mergeConsecutiveUsers([
        { role: "system", content: "s" },
        { role: "user", content: "first" },
        { role: "user", content: "second" },
        { role: "assistant", content: "ok" },
        { role: "user", content: "text" },
        { role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png;base64,AA" } }, { type: "text", text: "see" }] },
      ]),
    ).toEqual([
      { role: "system", content: "s" },
      { role: "user", content: "first\n\nsecond" },
      { role: "assistant", content: "ok" },
      {
        role: "user",
        content: [
          { type: "text", text: "text" },
          { type: "image_url", image_url: { url: "data:image/png;base64,AA" } },
          { type: "text", text: "see" },
        ],
      },
    ]);
  });

  it("repair and merge together: an interrupted call is closed before the next user message", () => {
    const repaired = mergeConsecutiveUsers(
      repairHistory([
        { role: "user", content: "go" },
        { role: "assistant", content: null, tool_calls: [{ id: "1", type: "function", function: { name: "exec", arguments: "{}" } }] },
        { role: "user", content: "hello?" },
      ]),
    );
    expect(repaired.map((m) => m.role)).toEqual(["user", "assistant", "tool", "user"]);
  });
});
