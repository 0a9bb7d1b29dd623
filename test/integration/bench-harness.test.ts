import { readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { burst, daemonFor, fakeModel, loadTroupe } from "../bench/harness.js";

// The in-process benches (test/bench/harness.ts) measure troupe as users run it: its bundle, built
// as the CLI's is, not its source under a TypeScript loader.
describe("the in-process benches' troupe", () => {
  const model = fakeModel(0);
  afterAll(async () => (await model).stop());

  it("is the bench bundle's code", async () => {
    const { createDaemon, loadConfig } = await loadTroupe();
    const bundle = readFileSync(fileURLToPath(new URL("../../dist-bench/troupe-bench.cjs", import.meta.url)), "latin1");
    // Compared as booleans: a failure would otherwise print the 1.5 MB bundle.
    expect(bundle.includes(createDaemon.toString()), "createDaemon is the bundle's").toBe(true);
    expect(bundle.includes(loadConfig.toString()), "loadConfig is the bundle's").toBe(true);
  });

  it("runs a turn of the bench's fake model (one tool call) end to end", async () => {
    const { daemon, dir } = await daemonFor((await model).url, { maxConcurrentTurns: 2 });
    try {
      expect(await burst(daemon, ["a", "b"])).toBeGreaterThan(0);
      expect(daemon.store.commitStats.requests).toBeGreaterThan(0);
    } finally {
      await daemon.shutdown();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
