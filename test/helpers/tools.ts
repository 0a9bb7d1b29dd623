import { createToolRegistry } from "../../src/tools/registry.js";
import type { Tool, ToolContext } from "../../src/tools/contract.js";
import type { Sandbox } from "../../src/tools/sandbox.js";

export function toolCtx(workspace: string, over: Partial<ToolContext> = {}): ToolContext {
  return { workspace, sessionKey: "cli:direct", turnId: "t1", callId: "c1", idempotencyKey: "cli:direct:t1:c1", signal: new AbortController().signal, channel: "cli", chatId: "direct", ...over };
}

export const sandboxOf = (workspace: string, readableRoots: string[] = []): Sandbox => ({ workspace, restrict: true, readableRoots, allowHardLinks: false });

/** Runs tools the way a turn does: through the registry, so errors come back as text with the hint. */
export function runner(tools: Tool[], workspace: string, maxResultChars?: number) {
  const registry = createToolRegistry(tools, { maxResultChars });
  return (name: string, args: Record<string, unknown>, over: Partial<ToolContext> = {}) => registry.execute(name, args, toolCtx(workspace, over));
}
