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
  const dir = join(ctx.workspace, TOOL_RESULTS_DIR);
  const file = join(dir, `${safe(ctx.turnId)}-${safe(ctx.callId)}.txt`);
  await mkdir(dir, { recursive: true });
  await writeFile(file, result, "utf8");
  const relative = join(TOOL_RESULTS_DIR, `${safe(ctx.turnId)}-${safe(ctx.callId)}.txt`);
  return (
    `${result.slice(0, maxChars)}\n\n[${toolName} output truncated: ${result.length} chars in all, ${maxChars} shown. ` +
    `The full output is saved at ${relative} in the workspace; read it with read_file (offset/limit) or search it with grep.]`
  );
}
