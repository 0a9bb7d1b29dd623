import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool, TOOL_ERROR_HINT, type ToolContext } from "../../src/tools/contract.js";
import { createToolRegistry } from "../../src/tools/registry.js";

const ctx: ToolContext = { workspace: "/w", sessionKey: "s", turnId: "t", callId: "c", idempotencyKey: "s:t:c", signal: new AbortController().signal };

const sleepTool = defineTool({
  name: "sleep",
  description: "Sleeps.",
  parameters: z.object({ seconds: z.number().int(), loud: z.boolean().optional() }),
  execute: async (a) => `slept ${a.seconds}s${a.loud ? "!" : ""}`,
});

describe("tool registry", () => {
  const registry = createToolRegistry([
    sleepTool,
    defineTool({ name: "boom", description: "Fails.", parameters: z.object({}), execute: async () => { throw new Error("disk on fire"); } }),
    { name: "mcp_search", description: "From MCP.", source: "mcp", parameters: { jsonSchema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] } }, execute: async (a) => `found ${String(a.q)}` },
  ]);

  it("casts obvious slips before validating", async () => {
    expect(await registry.execute("sleep", { seconds: "60", loud: "true" }, ctx)).toBe("slept 60s!");
  });

  it("names invalid arguments and ends every error with the hint", async () => {
    const r = await registry.execute("sleep", { seconds: "soon" }, ctx);
    expect(r).toBe(`Error: invalid arguments for sleep: seconds: Invalid input: expected number, received string\n\n${TOOL_ERROR_HINT}`);
    expect(await registry.execute("mcp_search", {}, ctx)).toBe(`Error: missing required parameter(s): q\n\n${TOOL_ERROR_HINT}`);
    expect(await registry.execute("boom", {}, ctx)).toBe(`Error: boom failed: disk on fire\n\n${TOOL_ERROR_HINT}`);
  });

  it("lists the available tools when one is unknown", async () => {
    expect(await registry.execute("nap", {}, ctx)).toBe(`Error: tool "nap" not found. Available tools: boom, mcp_search, sleep\n\n${TOOL_ERROR_HINT}`);
  });

  it("gives the model sorted function schemas, built-ins before MCP tools", () => {
    const schemas = registry.schemas();
    expect(schemas.map((s) => s.function.name)).toEqual(["boom", "sleep", "mcp_search"]);
    expect(schemas[1]?.function.parameters).toMatchObject({ type: "object", properties: { seconds: { type: "integer" } }, required: ["seconds"] });
  });
});
