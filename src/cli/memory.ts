import type { LoadedConfig } from "../config/index.js";
import { memoryOverview, memoryOverviewLines, type MemoryOverview } from "../memory/overview.js";
import { openStore } from "../store/store.js";
import { connectDaemon } from "./client.js";
import { printable } from "./printable.js";

/** `troupe memory show`: through the running daemon (it holds the store and runs Dream), else from the files and store. */
export async function memoryShowCommand(loaded: LoadedConfig): Promise<number> {
  const client = await connectDaemon(loaded.paths);
  let overview: MemoryOverview;
  if (client) overview = await client.get<MemoryOverview>("/api/memory");
  else {
    const store = await openStore(loaded.paths.storeDir);
    try {
      overview = await memoryOverview(loaded.workspace, store);
    } finally {
      await store.close();
    }
  }
  for (const line of memoryOverviewLines(overview)) console.log(printable(line));
  return 0;
}

/** `troupe dream run`: the daemon's Dream when it runs (answers when the run ends), else Dream in this process. */
export async function dreamRunCommand(loaded: LoadedConfig): Promise<number> {
  const client = await connectDaemon(loaded.paths);
  if (client) {
    console.log(printable((await client.post<{ result: string }>("/api/dream/run")).result));
    return 0;
  }
  const { createAgentRuntime } = await import("../runtime.js");
  const runtime = await createAgentRuntime(loaded);
  try {
    const result = await runtime.memory.control.run();
    console.log(printable(result));
    return result.startsWith("Dream failed") ? 1 : 0;
  } finally {
    await runtime.close();
  }
}

/** `troupe dream log [sha]` and `troupe dream restore <sha>`: the memory's git history, on the files. */
export async function dreamHistoryCommand(loaded: LoadedConfig, action: "log" | "restore", sha?: string): Promise<number> {
  const { memoryHistoryCommands } = await import("../../actors/dream.js");
  const commands = memoryHistoryCommands(loaded.workspace);
  console.log(printable(action === "log" ? await commands.log(sha) : await commands.restore(sha!)));
  return 0;
}
