import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { parseConfig } from "../../src/config/index.js";
import { BUILTIN_JSON_SCHEMAS } from "../../src/tools/builtin-json-schemas.js";
import { lazySchema } from "../../src/lazy-schema.js";
import { defineTool, jsonSchemaOf, zodJsonSchema, type Tool } from "../../src/tools/contract.js";
import { createToolRegistry } from "../../src/tools/registry.js";
import { createBuiltinTools } from "../../src/tools/builtin/index.js";
import { cronTool } from "../../src/tools/builtin/cron.js";
import { spawnTool, subagentsTool } from "../../src/tools/builtin/spawn.js";

/** Every built-in tool (defined with defineTool), exec and web on; only their schemas are looked at. */
function builtinTools(): Tool[] {
  const config = parseConfig({}, "/nonexistent/config.json").config;
  const paths = { dataDir: "/nonexistent", mediaDir: "/nonexistent/media", configFile: "/nonexistent/config.json" };
  return [
    ...createBuiltinTools({ config, workspace: "/nonexistent/ws", paths, store: {} as never, channels: () => [] }),
    spawnTool({} as never),
    subagentsTool({} as never),
    cronTool({ service: () => Promise.reject(new Error("not called")), defaultTz: "UTC" }),
  ];
}

const FILE = fileURLToPath(new URL("../../src/tools/builtin-json-schemas.ts", import.meta.url));

describe("the built-in tools' JSON Schemas made ahead (src/tools/builtin-json-schemas.ts)", () => {
  const tools = builtinTools();
  const live = Object.fromEntries(tools.map((t) => [t.name, zodJsonSchema(t.parameters as z.ZodType)]));

  if (process.env.UPDATE_TOOL_SCHEMAS) {
    writeFileSync(
      FILE,
      "// Made by test/unit/tool-json-schemas.test.ts (UPDATE_TOOL_SCHEMAS=1 npx vitest run test/unit/tool-json-schemas.test.ts):\n" +
        "// each built-in tool's zod parameters as JSON Schema, so a start does not convert them (src/tools/contract.ts).\n" +
        `export const BUILTIN_JSON_SCHEMAS: Readonly<Record<string, Record<string, unknown>>> = ${JSON.stringify(live, null, 2)};\n`,
    );
  }

  it("hold one schema per built-in tool, each what zod makes of its parameters now", () => {
    const stale = "src/tools/builtin-json-schemas.ts is stale: run UPDATE_TOOL_SCHEMAS=1 npx vitest run test/unit/tool-json-schemas.test.ts";
    expect(Object.keys(BUILTIN_JSON_SCHEMAS).sort(), stale).toEqual(Object.keys(live).sort());
    for (const tool of tools) {
      expect(BUILTIN_JSON_SCHEMAS[tool.name], `${tool.name}: ${stale}`).toEqual(live[tool.name]);
      expect(jsonSchemaOf(tool)).toBe(BUILTIN_JSON_SCHEMAS[tool.name]);
    }
  });

  it("are what the model is shown, the zod parameters built only when a call is checked", async () => {
    let builds = 0;
    const tool = defineTool({
      name: "list_dir",
      description: "d",
      parameters: lazySchema(() => (builds++, z.object({ path: z.string() }))),
      execute: async ({ path }) => `listed ${path}`,
    });
    const registry = createToolRegistry([tool]);
    expect(registry.schemas()[0]).toMatchObject({ function: { name: "list_dir", parameters: BUILTIN_JSON_SCHEMAS.list_dir } });
    expect(builds).toBe(0);
    const ctx = { workspace: "/w", sessionKey: "s", turnId: "t", callId: "c", idempotencyKey: "k", signal: new AbortController().signal };
    expect(await registry.execute("list_dir", { path: "." }, ctx)).toBe("listed .");
    expect(await registry.execute("list_dir", {}, ctx)).toMatch(/^Error: invalid arguments for list_dir: path: /);
    expect(builds).toBe(1);
  });

  it("leave other tools' schemas to zod, and MCP tools' to their server", () => {
    const own: Tool = { name: "read_file_2", description: "", parameters: z.object({ a: z.string() }), execute: async () => "" };
    expect(jsonSchemaOf(own)).toEqual({ type: "object", properties: { a: { type: "string" } }, required: ["a"] });
    const mcp: Tool = { name: "read_file", description: "", parameters: { jsonSchema: { type: "object" } }, source: "mcp", execute: async () => "" };
    expect(jsonSchemaOf(mcp)).toEqual({ type: "object" });
  });
});
