import { spawnSync } from "node:child_process";
import { copyFile, mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { TROUPE_BIN } from "../helpers/cli.js";
import { useTempDirs } from "../helpers/tmp.js";

const TRACE = fileURLToPath(new URL("../fixtures/module-trace.mjs", import.meta.url));

/** Runs the CLI and returns the modules it loaded. */
async function modulesLoaded(args: string[], home: string): Promise<{ code: number | null; stdout: string; modules: string[] }> {
  const trace = join(home, "modules.txt");
  const r = spawnSync(process.execPath, ["--import", TRACE, TROUPE_BIN, ...args], { env: { ...process.env, TROUPE_HOME: home, MODULE_TRACE: trace }, encoding: "utf8" });
  const modules = (await readFile(trace, "utf8")).split("\n").filter(Boolean);
  return { code: r.status, stdout: r.stdout, modules };
}

const HEAVY = /grammy|linkedom|openai|pino-pretty|@mozilla|turndown|unpdf|mammoth|fflate|tsx|\.ts$/;

describe("start-up", () => {
  const tempDir = useTempDirs();

  it("runs compiled JavaScript and loads only what a command uses", async () => {
    const home = await tempDir();
    const version = await modulesLoaded(["--version"], home);
    expect(version.code).toBe(0);
    expect(version.modules.some((m) => m.includes("/dist/main.js"))).toBe(true);
    expect(version.modules.filter((m) => HEAVY.test(m))).toEqual([]);
    // --version needs commander and nothing else of node_modules (the rest is bundled or not loaded).
    expect(version.modules.filter((m) => m.includes("node_modules"))).toEqual([]);
    const list = await modulesLoaded(["sessions", "list"], home);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain("no sessions");
    expect(list.modules.filter((m) => HEAVY.test(m))).toEqual([]);
  });

  it("says to build when dist/ is missing", async () => {
    const dir = await tempDir();
    await mkdir(join(dir, "bin"));
    await copyFile(TROUPE_BIN, join(dir, "bin", "troupe.js"));
    const r = spawnSync(process.execPath, [join(dir, "bin", "troupe.js"), "--version"], { encoding: "utf8" });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("run npm run build");
  });
});
