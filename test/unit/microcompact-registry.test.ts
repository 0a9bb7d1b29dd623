import { describe, expect, it } from "vitest";
import { microcompact } from "../../src/context/microcompact.js";
import type { ChatMessage } from "../../src/providers/messages.js";

const results = (n: number): ChatMessage[] =>
  Array.from({ length: n }, (_, i) => [
    { role: "assistant", content: "", tool_calls: [{ id: `c${i}`, type: "function", function: { name: "mcp_fs_read", arguments: "{}" } }] } as ChatMessage,
    { role: "tool", tool_call_id: `c${i}`, name: "mcp_fs_read", content: "x".repeat(500) } as ChatMessage,
  ]).flat();

describe("microcompact's read-only flag follows the registry at call time", () => {
  it("a tool that becomes known read-only (an MCP server connects) has its old results cleared", () => {
    const history = results(15);
    // Before the MCP server is connected the registry does not know the tool.
    expect(microcompact(history, () => false)).toBe(history);
    const sent = microcompact([...history], (name) => name === "mcp_fs_read");
    expect(sent.filter((m) => m.role === "tool" && m.content.startsWith("[mcp_fs_read result cleared")).length).toBe(5);
  });
  it("a tool that is gone (its MCP server removed) is not named as one to call again", () => {
    const history = results(15);
    microcompact(history, (name) => name === "mcp_fs_read");
    const sent = microcompact([...history], () => false);
    expect(sent.filter((m) => m.role === "tool" && m.content.startsWith("[mcp_fs_read result cleared")).length).toBe(0);
  });
});
