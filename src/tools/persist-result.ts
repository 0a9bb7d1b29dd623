import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ToolContext } from "./contract.js";

/** Where long results are kept, inside the workspace so read_file and grep reach them. */
export const TOOL_RESULTS_DIR = ".tool-results";

const safe = (s: string) => s.replace(/[^\w.-]+/g, "_").slice(0, 80);

/**
 * A result over `maxChars` is saved whole to a file and the model gets its head plus the path.
 * The file name comes from the turn and call ids, so a re-run after a crash writes the same file.
 */
export async function persistLongResult(result: string, toolName: string, ctx: ToolContext, maxChars: number): Promise<string> {
  if (result.length <= maxChars) return result;
  const name = safe(toolName);
  const head = `${result.slice(0, maxChars)}\n\n[${name} output truncated: ${result.length} chars in all, ${maxChars} shown.`;
  const dir = join(ctx.workspace, TOOL_RESULTS_DIR);
  const file = join(dir, `${safe(ctx.turnId)}-${safe(ctx.callId)}.txt`);
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(file, result, "utf8");
  } catch (err) {
    // The cap matters more than the copy: without it the whole result would go into the checkpoint.
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    return `${head} The full output could not be saved (${code}).]`;
  }
  const relative = join(TOOL_RESULTS_DIR, `${safe(ctx.turnId)}-${safe(ctx.callId)}.txt`);
  return `${head} The full output is saved at ${relative} in the workspace; read it with read_file (offset/limit) or search it with grep.]`;
}
