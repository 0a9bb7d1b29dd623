import { join } from "node:path";
import { z } from "zod";
import { createBus } from "../../src/bus/index.js";
import { createOpenAiProvider } from "../../src/providers/client.js";
import { openStore, type Store } from "../../src/store/store.js";
import { defineTool } from "../../src/tools/contract.js";
import { createToolRegistry, type ToolRegistry } from "../../src/tools/registry.js";
import type { TurnDeps } from "../../actors/turn.js";
import type { TurnInput } from "../../machines/turn.machine.js";

/** Tools whose runs are counted, to see what ran, how often and how concurrently. */
export function countingTools() {
  const runs: string[] = [];
  let active = 0;
  let maxActive = 0;
  const track = async <T>(name: string, fn: () => Promise<T>) => {
    active++;
    maxActive = Math.max(maxActive, active);
    runs.push(name);
    try {
      return await fn();
    } finally {
      active--;
    }
  };
  const registry: ToolRegistry = createToolRegistry([
    defineTool({
      name: "lookup",
      description: "Looks a word up (read-only).",
      parameters: z.object({ word: z.string(), delayMs: z.number().int().optional() }),
      readOnly: true,
      execute: (args) => track("lookup", async () => {
        await new Promise((r) => setTimeout(r, args.delayMs ?? 30));
        return `definition of ${args.word}`;
      }),
    }),
    defineTool({
      name: "append_note",
      description: "Appends a note (a side effect, not idempotent).",
      parameters: z.object({ text: z.string() }),
      execute: (args) => track("append_note", async () => `noted: ${args.text}`),
    }),
  ]);
  return { registry, runs, maxActive: () => maxActive };
}

export async function turnDeps(dir: string, url: string, registry: ToolRegistry, stream = true): Promise<TurnDeps & { store: Store }> {
  const store = await openStore(join(dir, "store"));
  const provider = createOpenAiProvider(
    { spec: { name: "custom", displayName: "c", defaultApiBase: null, keywords: [] }, apiKey: "k", apiBase: url, extraHeaders: {}, model: "fake-model" },
    { maxTokens: 256, temperature: 0, stream, backoff: { maxRetries: 2, baseDelayMs: 1, maxDelayMs: 5 } },
  );
  return { store, provider, registry, workspace: dir, bus: createBus() };
}

export function turnInput(turnId: string, content: string, maxIterations = 10): TurnInput {
  return {
    turnId,
    sessionKey: "test:1",
    channel: "test",
    chatId: "1",
    messages: [
      { role: "system", content: "You are a test." },
      { role: "user", content },
    ],
    maxIterations,
  };
}
