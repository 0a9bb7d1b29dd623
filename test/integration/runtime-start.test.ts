import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { createAgentRuntime } from "../../src/agent-runtime.js";
import { loadConfig } from "../../src/config/load.js";
import { StoreLockedError } from "../../src/errors.js";
import { startAgentRuntime } from "../../src/runtime-start.js";
import { openStore } from "../../src/store/store.js";
import { writeHome } from "../helpers/home.js";
import { useTempDirs } from "../helpers/tmp.js";

/** `troupe agent` starts the store's open before it loads the rest of the runtime (src/runtime-start.ts). */
describe("an agent runtime started ahead", () => {
  const tempDir = useTempDirs();

  it("opens the store while the caller goes on, and the runtime built on it holds it until closed", async () => {
    const home = await tempDir();
    await writeHome(home, "http://127.0.0.1:9/v1");
    const loaded = await loadConfig({ TROUPE_HOME: home });
    const start = startAgentRuntime(loaded);
    await start.underWay;
    const runtime = await createAgentRuntime(loaded, {}, start);
    expect(runtime.store).toBe(await start.store);
    await expect(openStore(loaded.paths.storeDir)).rejects.toBeInstanceOf(StoreLockedError);
    await runtime.close();
    await (await openStore(loaded.paths.storeDir)).close();
  });

  it("a config check that fails throws before the store is opened", async () => {
    const home = await tempDir();
    await writeHome(home, "http://127.0.0.1:9/v1", { config: { tools: { restrictToWorkspace: true, exec: { sandbox: "bwrap" } } } });
    const loaded = await loadConfig({ TROUPE_HOME: home });
    // bwrap is looked up on the process's PATH.
    const saved = process.env.PATH;
    process.env.PATH = "/nonexistent";
    try {
      expect(() => startAgentRuntime(loaded)).toThrow(/tools\.exec\.sandbox: "bwrap" but bwrap is not on PATH/);
    } finally {
      process.env.PATH = saved;
    }
    expect(existsSync(loaded.paths.storeDir)).toBe(false);
  });

  it("a runtime that fails while it is built lets go of the store it opened", async () => {
    const home = await tempDir();
    await writeHome(home, "http://127.0.0.1:9/v1");
    const loaded = await loadConfig({ TROUPE_HOME: home });
    const start = startAgentRuntime(loaded);
    // The runtime is built on what the start resolved: a provider that makes no client fails it.
    const broken = { ...start, resolved: { ...start.resolved, get model(): string { throw new Error("failed while built"); } } };
    await expect(createAgentRuntime(loaded, {}, broken)).rejects.toThrow("failed while built");
    // Not held any more: this process can open it again.
    await (await openStore(loaded.paths.storeDir)).close();
  });
});
