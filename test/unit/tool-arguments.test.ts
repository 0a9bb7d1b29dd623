import { describe, expect, it } from "vitest";
import { z } from "zod";
import { castArguments, unknownArguments } from "../../src/tools/arguments.js";
import { defineTool, TOOL_ERROR_HINT, type ToolContext } from "../../src/tools/contract.js";
import { createToolRegistry } from "../../src/tools/registry.js";

const ctx: ToolContext = { workspace: "/w", sessionKey: "s", turnId: "t", callId: "c", idempotencyKey: "s:t:c", signal: new AbortController().signal };
const obj = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ type: "object", properties, ...extra });

// The cases of nanobot's tests/tools/test_tool_validation.py (cast_params), inputs and expected outcomes.
describe("castArguments (nanobot's cases)", () => {
  it("casts a string to an integer and to a number", () => {
    expect(castArguments({ count: "42" }, obj({ count: { type: "integer" } }))).toEqual({ count: 42 });
    expect(castArguments({ rate: "3.14" }, obj({ rate: { type: "number" } }))).toEqual({ rate: 3.14 });
  });

  it.each([
    ["true", true],
    ["false", false],
    ["1", true],
    ["0", false],
    ["yes", true],
    ["no", false],
    ["False", false],
    ["NO", false],
    ["YES", true],
  ])("casts %j to the boolean %s", (text, value) => {
    expect(castArguments({ flag: text }, obj({ flag: { type: "boolean" } })).flag).toBe(value);
  });

  it("leaves strings that are no boolean for validation to refuse", () => {
    expect(castArguments({ flag: "random" }, obj({ flag: { type: "boolean" } })).flag).toBe("random");
    expect(castArguments({ flag: "maybe" }, obj({ flag: { type: "boolean" } })).flag).toBe("maybe");
  });

  it("casts the items of an array", () => {
    expect(castArguments({ nums: ["1", "2", "3"] }, obj({ nums: { type: "array", items: { type: "integer" } } }))).toEqual({ nums: [1, 2, 3] });
  });

  it("casts inside nested objects, and objects inside arrays", () => {
    const schema = obj({ config: obj({ port: { type: "integer" }, debug: { type: "boolean" } }) });
    expect(castArguments({ config: { port: "8080", debug: "true" } }, schema)).toEqual({ config: { port: 8080, debug: true } });
    const edits = obj({ edits: { type: "array", items: obj({ line: { type: "integer" }, all: { type: "boolean" } }) } });
    expect(castArguments({ edits: [{ line: "3", all: "no" }, { line: 4 }] }, edits)).toEqual({ edits: [{ line: 3, all: false }, { line: 4 }] });
  });

  it("casts through typed additionalProperties and nullable unions", () => {
    expect(castArguments({ extra: "2" }, obj({}, { additionalProperties: { type: "integer" } }))).toEqual({ extra: 2 });
    expect(castArguments({ n: "7" }, obj({ n: { type: ["integer", "null"] } }))).toEqual({ n: 7 });
    expect(castArguments({ n: "7" }, obj({ n: { anyOf: [{ type: "integer" }, { type: "null" }] } }))).toEqual({ n: 7 });
  });

  it("never casts a boolean to an integer", () => {
    expect(castArguments({ count: true }, obj({ count: { type: "integer" } })).count).toBe(true);
  });

  it("keeps an empty string, and strings that are no number", () => {
    expect(castArguments({ name: "" }, obj({ name: { type: "string" } })).name).toBe("");
    expect(castArguments({ count: "abc" }, obj({ count: { type: "integer" } })).count).toBe("abc");
    expect(castArguments({ count: "12.5.7" }, obj({ count: { type: "integer" } })).count).toBe("12.5.7");
    expect(castArguments({ count: "12.5" }, obj({ count: { type: "integer" } })).count).toBe("12.5");
    expect(castArguments({ rate: "not_a_number" }, obj({ rate: { type: "number" } })).rate).toBe("not_a_number");
    expect(castArguments({ count: "" }, obj({ count: { type: "integer" } })).count).toBe("");
  });

  it.each(["NaN", "Infinity", "-Infinity", "0x10"])("does not make %j a number", (text) => {
    expect(castArguments({ rate: text }, obj({ rate: { type: "number" } })).rate).toBe(text);
  });

  it("keeps null for every type", () => {
    const schema = obj({ name: { type: "string" }, count: { type: "integer" }, items: { type: "array" }, config: { type: "object" } });
    expect(castArguments({ name: null, count: null, items: null, config: null }, schema)).toEqual({ name: null, count: null, items: null, config: null });
  });

  it("never wraps a single value into an array", () => {
    expect(castArguments({ items: 5 }, obj({ items: { type: "array" } })).items).toBe(5);
    expect(castArguments({ items: "text" }, obj({ items: { type: "array" } })).items).toBe("text");
  });

  it("spells a number or a boolean given for text", () => {
    expect(castArguments({ q: 42, b: true }, obj({ q: { type: "string" }, b: { type: "string" } }))).toEqual({ q: "42", b: "true" });
  });
});

describe("unknownArguments", () => {
  const schema = obj({ query: { type: "string" }, meta: obj({ tag: { type: "string" }, flags: { type: "array", items: { type: "string" } } }) });

  it("finds names the schema does not have, at any depth, with what is accepted there", () => {
    expect(unknownArguments({ query: "hi", extra: "x", meta: { tag: "a", colour: "red" } }, schema, true)).toEqual([
      { at: "", names: ["extra"], accepted: ["query", "meta"] },
      { at: "meta", names: ["colour"], accepted: ["tag", "flags"] },
    ]);
    const list = obj({ edits: { type: "array", items: obj({ line: { type: "integer" } }) } });
    expect(unknownArguments({ edits: [{ line: 1 }, { line: 2, col: 3 }] }, list, true)).toEqual([{ at: "edits[1]", names: ["col"], accepted: ["line"] }]);
  });

  it("an open schema (an MCP tool's without additionalProperties: false) takes anything", () => {
    expect(unknownArguments({ query: "hi", extra: "x" }, schema, false)).toEqual([]);
    expect(unknownArguments({ query: "hi", extra: "x" }, { ...schema, additionalProperties: false }, false)).toEqual([
      { at: "", names: ["extra"], accepted: ["query", "meta"] },
    ]);
    expect(unknownArguments({ extra: 1 }, obj({}, { additionalProperties: { type: "integer" } }), true)).toEqual([]);
  });
});

describe("the registry with unknown and slipped arguments", () => {
  const searchParams = z.object({
    query: z.string().min(2),
    count: z.number().int().min(1).max(10),
    meta: z.object({ tag: z.string(), flags: z.array(z.boolean()).optional() }).optional(),
  });
  const search = defineTool({ name: "search", description: "Searches.", parameters: searchParams, execute: async (a) => JSON.stringify(a) });
  const mcp = {
    name: "mcp_lookup",
    description: "From MCP.",
    source: "mcp" as const,
    parameters: { jsonSchema: obj({ q: { type: "string" }, n: { type: "integer" } }, { required: ["q"] }) },
    execute: async (a: Record<string, unknown>) => JSON.stringify(a),
  };
  const registry = createToolRegistry([search, mcp]);

  it("runs a call whose nested values needed casting", async () => {
    const out = await registry.execute("search", { query: "hello", count: "3", meta: { tag: "t", flags: ["yes", "0"] } }, ctx);
    expect(JSON.parse(out)).toEqual({ query: "hello", count: 3, meta: { tag: "t", flags: [true, false] } });
  });

  it("refuses unknown arguments by name, listing the accepted ones, and does not run the tool", async () => {
    let ran = false;
    const spy = createToolRegistry([defineTool({ name: "search", description: "Searches.", parameters: searchParams, execute: async () => ((ran = true), "ran") })]);
    const out = await spy.execute("search", { query: "hello", count: 3, line_hint: 7 }, ctx);
    expect(out).toBe(`Error: search: unknown argument "line_hint" (accepted: query, count, meta). Call it again with only the accepted arguments.\n\n${TOOL_ERROR_HINT}`);
    expect(ran).toBe(false);
    const nested = await spy.execute("search", { query: "hello", count: 3, meta: { tag: "t", colour: "red", size: 2 } }, ctx);
    expect(nested).toContain('search: unknown arguments "colour", "size" in meta (accepted in meta: tag, flags)');
  });

  it("still names invalid values after casting (a boolean is no integer)", async () => {
    expect(await registry.execute("search", { query: "hello", count: true }, ctx)).toContain("count: Invalid input: expected number, received boolean");
    expect(await registry.execute("search", { query: "hello", count: 0 }, ctx)).toContain("count: Too small");
  });

  it("passes an MCP tool's extra arguments on (its schema does not close them) and casts its values", async () => {
    expect(JSON.parse(await registry.execute("mcp_lookup", { q: "x", n: "5", extra: 1 }, ctx))).toEqual({ q: "x", n: 5, extra: 1 });
  });
});
