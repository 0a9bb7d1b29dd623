import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool, TOOL_ERROR_HINT, type ToolContext } from "../../src/tools/contract.js";
import { createToolRegistry } from "../../src/tools/registry.js";
import { microcompact } from "../../src/context/microcompact.js";
import type { ChatMessage } from "../../src/providers/messages.js";
import { useTempDirs } from "../helpers/tmp.js";

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

  it("suggests the tool a near-miss name means, and runs nothing (nanobot's _suggest_name)", async () => {
    // nanobot tests/tools/test_tool_registry.py::test_prepare_call_rejects_near_miss_tool_name_with_suggestion
    let ran = 0;
    const named = (name: string) => defineTool({ name, description: name, parameters: z.object({ path: z.string().optional() }), execute: async () => `${name} ran ${++ran}` });
    const tools = createToolRegistry([named("read_file")]);
    expect(await tools.execute("readFile", { path: "foo.txt" }, ctx)).toBe(
      `Error: tool "readFile" not found. Did you mean 'read_file'? Tool names must match exactly. Available tools: read_file\n\n${TOOL_ERROR_HINT}`,
    );
    expect(ran).toBe(0);
    const suggestion = async (name: string) => /Did you mean '([^']*)'\?/.exec(await tools.execute(name, {}, ctx))?.[1];
    // ::test_suggest_name_handles_canonical_tool_name_variants
    for (const variant of ["readFile", "read-file", "READ_FILE", "read file", "readfile"]) expect(await suggestion(variant)).toBe("read_file");
    // ::test_suggest_name_suppresses_low_confidence_and_non_unique_matches
    tools.register(named("write_file"));
    for (const miss of ["", "foo", "read", "file", "readfil", "read_file_tool", "--"]) expect(await suggestion(miss)).toBeUndefined();
    // ::test_suggest_name_updates_after_register_and_unregister
    tools.register(named("readFile"));
    expect(await suggestion("read-file")).toBeUndefined();
    tools.unregister("read_file");
    expect(await suggestion("read-file")).toBe("readFile");
    expect(ran).toBe(0);
  });

  it("gives the model sorted function schemas, built-ins before MCP tools", () => {
    const schemas = registry.schemas();
    expect(schemas.map((s) => s.function.name)).toEqual(["boom", "sleep", "mcp_search"]);
    expect(schemas[1]?.function.parameters).toMatchObject({ type: "object", properties: { seconds: { type: "integer" } }, required: ["seconds"] });
  });

  it("builds the schema list once per change of the tools: the same list until one is registered or unregistered", () => {
    const own = createToolRegistry([sleepTool]);
    const first = own.schemas();
    expect(own.schemas()).toBe(first);
    own.register(defineTool({ name: "nap", description: "Naps.", parameters: z.object({}), execute: async () => "napped" }));
    const second = own.schemas();
    expect(second).not.toBe(first);
    expect(second.map((s) => s.function.name)).toEqual(["nap", "sleep"]);
    own.unregister("nap");
    expect(own.schemas().map((s) => s.function.name)).toEqual(["sleep"]);
    // A filter gets a list of its own.
    expect(own.schemas((t) => t.name !== "sleep")).toEqual([]);
  });
});

describe("long tool results", () => {
  const tmp = useTempDirs();

  it("are saved whole to a file in the workspace; the model gets the head and the path", async () => {
    const ws = await tmp();
    const long = Array.from({ length: 500 }, (_, i) => `row ${i}`).join("\n");
    const registry = createToolRegistry(
      [defineTool({ name: "dump", description: "Dumps.", parameters: z.object({}), readOnly: true, execute: async () => long })],
      { maxResultChars: 100 },
    );
    const out = await registry.execute("dump", {}, { ...ctx, workspace: ws, turnId: "t9", callId: "call/1" });
    expect(out.startsWith(long.slice(0, 100))).toBe(true);
    expect(out).toMatch(/\[dump output truncated: \d+ chars in all, 100 shown\. The full output is saved at \.tool-results\/t9-call_1\.txt in the workspace/);
    expect(await readFile(join(ws, ".tool-results/t9-call_1.txt"), "utf8")).toBe(long);
    expect(await registry.execute("dump", {}, { ...ctx, workspace: ws })).not.toBe(long);
  });
});

describe("every tool result is capped before the turn keeps it", () => {
  const tmp = useTempDirs();
  const huge = "e".repeat(1_000_000);
  const max = 200;
  /** Longest a capped result can be: the head, the note after it, and for an error the hint. */
  const bound = max + 400 + TOOL_ERROR_HINT.length;
  const tools = [
    defineTool({ name: "explode", description: "Fails loudly.", parameters: z.object({}), execute: async () => { throw new Error(huge); } }),
    defineTool({ name: "strict", description: "Validates.", parameters: z.object({ n: z.number().refine(() => false, huge) }), execute: async () => "never" }),
    defineTool({ name: "dump", description: "Dumps.", parameters: z.object({}), execute: async () => huge }),
  ];

  it.each([
    ["a tool that throws a huge error", "explode", {}, undefined],
    ["a validation message that is huge", "strict", { n: 1 }, undefined],
    ["a huge arguments error", "dump", null, huge],
    ["an unknown tool with a huge name", huge, {}, undefined],
  ])("%s", async (_what, name, args, argumentsError) => {
    const ws = await tmp();
    const registry = createToolRegistry(tools, { maxResultChars: max });
    const out = await registry.execute(name, args, { ...ctx, workspace: ws, callId: "c1" }, argumentsError);
    expect(out.length).toBeLessThan(bound);
    expect(out.startsWith("Error: ")).toBe(true);
    expect(out.endsWith(TOOL_ERROR_HINT)).toBe(true);
  });

  it("keeps a huge error whole in a file, like a huge result", async () => {
    const ws = await tmp();
    const out = await createToolRegistry(tools, { maxResultChars: max }).execute("explode", {}, { ...ctx, workspace: ws, turnId: "t1", callId: "c2" });
    expect(out).toMatch(/\[explode output truncated: \d+ chars in all, 200 shown\. The full output is saved at \.tool-results\/t1-c2\.txt/);
    expect(await readFile(join(ws, ".tool-results/t1-c2.txt"), "utf8")).toBe(`explode failed: ${huge}`);
  });

  it("caps at 16,000 characters when no limit is configured", async () => {
    const out = await createToolRegistry(tools).execute("dump", {}, { ...ctx, workspace: await tmp() });
    expect(out.length).toBeGreaterThan(16_000);
    expect(out.length).toBeLessThan(16_400);
  });

  it("still caps when the full result cannot be saved", async () => {
    const dir = await tmp();
    const notADir = join(dir, "file");
    await writeFile(notADir, "");
    const out = await createToolRegistry(tools, { maxResultChars: max }).execute("dump", {}, { ...ctx, workspace: notADir });
    expect(out.startsWith(huge.slice(0, max))).toBe(true);
    expect(out).toMatch(/\[dump output truncated: 1000000 chars in all, 200 shown\. The full output could not be saved \(.*\)\.\]$/);
    expect(out.length).toBeLessThan(bound);
  });
});

describe("microcompact", () => {
  it("replaces read-only results older than the last 10 with a placeholder, leaving the rest", () => {
    const big = "x".repeat(500);
    const messages: ChatMessage[] = [{ role: "user", content: "go" }];
    for (let i = 0; i < 12; i++) messages.push({ role: "tool", tool_call_id: `r${i}`, name: "read_file", content: `${i}${big}` });
    messages.push({ role: "tool", tool_call_id: "e", name: "exec", content: big });
    messages.push({ role: "tool", tool_call_id: "s", name: "read_file", content: "short" });
    const out = microcompact(messages, (name) => name === "read_file");
    const contents = out.map((m) => ("content" in m ? m.content : ""));
    expect(contents[1]).toBe("[read_file result cleared to save context (501 chars); call read_file again if you need it]");
    expect(contents[2]).toMatch(/^\[read_file result cleared/);
    // 13 read-only results (the short one counts): the oldest 3 are cleared, the exec result is not read-only.
    expect(contents[3]).toMatch(/^\[read_file result cleared/);
    expect(contents[4]).toBe(`3${big}`);
    expect(contents[13]).toBe(big);
    expect(out).toHaveLength(messages.length);
    expect(messages[1]).toMatchObject({ content: `0${big}` });
  });

  it("clears the same results as a plain pass over each list, call after call as a long history moves, grows and changes", () => {
    // What it clears, worked out afresh for each list (no lists kept from the calls before).
    const reference = (messages: ChatMessage[], isReadOnly: (n: string) => boolean) => {
      const at = messages.flatMap((m, i) => (m.role === "tool" && m.name && isReadOnly(m.name) ? [i] : []));
      const old = new Set(at.slice(0, Math.max(0, at.length - 10)));
      return messages.map((m, i) => (old.has(i) && m.role === "tool" && m.content.length > 200 ? `cleared ${i}` : "kept"));
    };
    const shape = (out: ChatMessage[], messages: ChatMessage[]) => out.map((m, i) => (m === messages[i] ? "kept" : `cleared ${i}`));
    const isReadOnly = (name: string) => name === "read_file";
    const made: ChatMessage[] = [];
    for (let t = 0; t < 80; t++) {
      made.push({ role: "user", content: `u${t}` });
      made.push({ role: "tool", tool_call_id: `r${t}`, name: t % 4 === 0 ? "exec" : "read_file", content: t % 5 === 0 ? "short" : `${t}${"y".repeat(300)}` });
      const list: ChatMessage[] = [{ role: "system", content: `s${t}` }, ...made.slice(Math.max(0, made.length - 60 - (t % 4) * 3))];
      // A read-only result the previous lists held, moved, and a new one in the middle.
      if (t % 3 === 1) list.splice(list.length >> 1, 0, { role: "tool", tool_call_id: `x${t}`, name: "read_file", content: "z".repeat(400) });
      if (t % 5 === 2) list.splice(3, 2);
      expect(shape(microcompact(list, isReadOnly), list)).toEqual(reference(list, isReadOnly));
    }
  });
});
