import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { composeHooks, type AgentHook, type FinalizeContext, type HookTurn } from "../../src/hooks/hook.js";
import { loadHooks } from "../../src/hooks/load.js";
import { useTempDirs } from "../helpers/tmp.js";

const turn: HookTurn = { turnId: "t1", sessionKey: "api:k", channel: "api", chatId: "k", iteration: 0 };
const response = { content: "raw", toolCalls: [], finishReason: "stop", usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 } };
const finalizeCtx: FinalizeContext = { ...turn, response, messages: [] };

function recordingLogger() {
  const lines: Array<{ obj: Record<string, unknown>; msg: string }> = [];
  const log = (obj: Record<string, unknown>, msg: string) => void lines.push({ obj, msg });
  return { lines, logger: { info: log, warn: log, error: log } as never };
}

/** A hook that records every point it is called at, under its name. */
function recorder(name: string, calls: string[]): AgentHook {
  return {
    name,
    beforeIteration: (ctx) => void calls.push(`${name}:beforeIteration:${ctx.iteration}`),
    onStream: (_ctx, delta) => void calls.push(`${name}:onStream:${delta}`),
    onStreamEnd: (_ctx, { resuming }) => void calls.push(`${name}:onStreamEnd:${resuming}`),
    beforeExecuteTools: (ctx) => void calls.push(`${name}:beforeExecuteTools:${ctx.toolCalls.length}`),
    afterIteration: (ctx) => void calls.push(`${name}:afterIteration:${ctx.stopReason}`),
    finalizeContent: (_ctx, content) => {
      calls.push(`${name}:finalizeContent:${content}`);
      return `${content}+${name}`;
    },
  };
}

/** A hook that throws at every point. */
const thrower: AgentHook = {
  name: "bad",
  beforeIteration: () => {
    throw new Error("boom");
  },
  onStream: async () => {
    throw new Error("boom");
  },
  onStreamEnd: () => {
    throw new Error("boom");
  },
  beforeExecuteTools: async () => Promise.reject(new Error("boom")),
  afterIteration: () => {
    throw new Error("boom");
  },
  finalizeContent: () => {
    throw new Error("boom");
  },
};

async function everyPoint(chain: ReturnType<typeof composeHooks>) {
  await chain.beforeIteration({ ...turn, messages: [] });
  await chain.onStream(turn, "hi");
  await chain.onStreamEnd(turn, { resuming: true });
  await chain.beforeExecuteTools({ ...turn, toolCalls: [{ id: "c", name: "exec", rawArguments: "{}", arguments: {} }] });
  await chain.afterIteration({ ...turn, stopReason: "tool_calls", toolCalls: [] });
  return chain.finalizeContent(finalizeCtx, "raw");
}

describe("composeHooks (nanobot's CompositeHook)", () => {
  it("calls every hook at every point, in the order given", async () => {
    const calls: string[] = [];
    const content = await everyPoint(composeHooks([recorder("A", calls), recorder("B", calls)]));
    expect(calls).toEqual([
      "A:beforeIteration:0", "B:beforeIteration:0",
      "A:onStream:hi", "B:onStream:hi",
      "A:onStreamEnd:true", "B:onStreamEnd:true",
      "A:beforeExecuteTools:1", "B:beforeExecuteTools:1",
      "A:afterIteration:tool_calls", "B:afterIteration:tool_calls",
      "A:finalizeContent:raw", "B:finalizeContent:raw+A",
    ]);
    // finalizeContent is a pipeline: each hook gets the content the one before it returned.
    expect(content).toBe("raw+A+B");
  });

  it("a hook that throws (or rejects) is logged and skipped at every point; the hooks after it still run", async () => {
    const calls: string[] = [];
    const { lines, logger } = recordingLogger();
    const content = await everyPoint(composeHooks([thrower, recorder("good", calls)], logger));
    expect(calls).toHaveLength(6);
    expect(content).toBe("raw+good");
    expect(lines.map((l) => l.obj.point)).toEqual(["beforeIteration", "onStream", "onStreamEnd", "beforeExecuteTools", "afterIteration", "finalizeContent"]);
    expect(lines[0]!.msg).toBe("hook bad failed in beforeIteration; skipped");
    expect(lines[0]!.obj).toMatchObject({ hook: "bad", sessionKey: "api:k", turnId: "t1" });
  });

  it("finalizeContent: a hook returning something other than a string leaves the content as it was", async () => {
    const { lines, logger } = recordingLogger();
    const chain = composeHooks([{ name: "nothing", finalizeContent: () => undefined as unknown as string }, { name: "upper", finalizeContent: (_c, s) => s.toUpperCase() }], logger);
    expect(await chain.finalizeContent(finalizeCtx, "raw")).toBe("RAW");
    expect(String((lines[0]!.obj.err as Error).message)).toBe("finalizeContent returned undefined, not a string; the content is kept as it was");
  });

  it("awaits async hooks one after another, and says which points any hook has", async () => {
    const calls: string[] = [];
    const slow: AgentHook = { beforeIteration: async () => void (await new Promise((r) => setTimeout(r, 20)), calls.push("slow")) };
    const chain = composeHooks([slow, { beforeIteration: () => void calls.push("fast") }]);
    await chain.beforeIteration({ ...turn, messages: [] });
    expect(calls).toEqual(["slow", "fast"]);
    expect(chain.size).toBe(2);
    expect(chain.has("beforeIteration")).toBe(true);
    expect(chain.has("finalizeContent")).toBe(false);
    expect(composeHooks([]).size).toBe(0);
  });
});

describe("loadHooks: agents.defaults.hooks, then the workspace's hooks/", () => {
  const tmp = useTempDirs();

  it("loads the configured modules in order, then hooks/*.js and *.mjs by name; objects, factories and class instances", async () => {
    const ws = await tmp();
    await mkdir(join(ws, "hooks"));
    await mkdir(join(ws, "mine"));
    await writeFile(join(ws, "mine/first.mjs"), `export default { finalizeContent: (ctx, c) => c + "|first" };\n`);
    await writeFile(
      join(ws, "hooks/b-factory.mjs"),
      `export default async ({ workspace }) => ({ name: "factory", finalizeContent: (ctx, c) => c + "|factory:" + (workspace.length > 0) });\n`,
    );
    await writeFile(
      join(ws, "hooks/a-class.js"),
      `class Counter { constructor() { this.n = 0; } finalizeContent(ctx, c) { this.n++; return c + "|class" + this.n; } }\nexport default new Counter();\n`,
    );
    await writeFile(join(ws, "hooks/notes.txt"), "not a hook");
    const { logger, lines } = recordingLogger();
    const hooks = await loadHooks({ configured: ["mine/first.mjs"], workspace: ws, logger });
    expect(hooks.map((h) => h.name)).toEqual(["first.mjs", "a-class.js", "factory"]);
    const chain = composeHooks(hooks);
    expect(await chain.finalizeContent(finalizeCtx, "raw")).toBe("raw|first|class1|factory:true");
    // The class keeps its state in `this` across calls.
    expect(await chain.finalizeContent(finalizeCtx, "raw")).toBe("raw|first|class2|factory:true");
    expect(lines.at(-1)?.msg).toBe("3 hook(s) loaded");
  });

  it("a module that cannot be used is logged (what is wrong, how to fix it) and left out; the rest load", async () => {
    const ws = await tmp();
    await mkdir(join(ws, "hooks"));
    await writeFile(join(ws, "hooks/1-no-default.mjs"), `export const finalizeContent = (c) => c;\n`);
    await writeFile(join(ws, "hooks/2-syntax.mjs"), `export default {\n`);
    await writeFile(join(ws, "hooks/3-no-points.mjs"), `export default { hello() {} };\n`);
    await writeFile(join(ws, "hooks/4-wrong-type.mjs"), `export default { onStream: "yes" };\n`);
    await writeFile(join(ws, "hooks/5-factory-throws.mjs"), `export default () => { throw new Error("no API key"); };\n`);
    await writeFile(join(ws, "hooks/6-good.mjs"), `export default { afterIteration() {} };\n`);
    const { logger, lines } = recordingLogger();
    const hooks = await loadHooks({ configured: ["/nonexistent/hook.mjs"], workspace: ws, logger });
    expect(hooks.map((h) => h.name)).toEqual(["6-good.mjs"]);
    const errors = lines.filter((l) => l.msg.includes("not loaded")).map((l) => l.msg);
    expect(errors).toHaveLength(6);
    expect(errors[0]).toBe(
      "hook /nonexistent/hook.mjs not loaded: the file does not exist. Fix the module, or remove it from agents.defaults.hooks / the workspace's hooks/ folder",
    );
    expect(errors[1]).toContain("it has no default export; export default an object with hook methods, or a function returning one");
    expect(errors[2]).toContain("2-syntax.mjs not loaded:");
    expect(errors[3]).toContain("it has none of the hook points (beforeIteration, onStream, onStreamEnd, beforeExecuteTools, afterIteration, finalizeContent)");
    expect(errors[4]).toContain("onStream must be a function");
    expect(errors[5]).toContain("not loaded: no API key");
  });

  it("no hooks/ folder and nothing configured: no hooks", async () => {
    const { logger } = recordingLogger();
    expect(await loadHooks({ configured: [], workspace: await tmp(), logger })).toEqual([]);
  });
});
