import { spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { writeHome } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const TRACE = fileURLToPath(new URL("../fixtures/module-trace.mjs", import.meta.url));

/** Source files that only a daemon runs (src/daemon-parts.ts): channels, cron, heartbeat, upkeep, the actor tree (and the cron jobs, which only /status reads otherwise). */
const DAEMON_ONLY = [
  "actors/channel.ts",
  "actors/cron.ts",
  "actors/heartbeat.ts",
  "actors/session-host.ts",
  "actors/subagents.ts",
  "src/channels/api.ts",
  "src/cron/jobs.ts",
  "src/cron/schedule.ts",
  "src/cron/service.ts",
  "src/store/upkeep.ts",
  "src/server/actor-tree.ts",
  "src/server/event-log.ts",
];

/**
 * Runs, in a fresh Node under tsx with the module trace, an in-process agent runtime (what `troupe agent`
 * builds) or a daemon (what `troupe gateway` builds) on `home`, and returns the source files it loaded.
 */
async function sourcesLoaded(kind: "agent" | "daemon", home: string): Promise<string[]> {
  const script = join(home, `${kind}.mts`);
  const trace = join(home, `${kind}-modules.txt`);
  await writeFile(
    script,
    `import { loadConfig } from ${JSON.stringify(join(ROOT, "src/config/load.ts"))};
import { createAgentRuntime, createDaemon } from ${JSON.stringify(join(ROOT, "src/runtime.ts"))};
const loaded = await loadConfig({ TROUPE_HOME: ${JSON.stringify(home)} });
if (${JSON.stringify(kind)} === "agent") await (await createAgentRuntime(loaded)).close();
else await (await createDaemon(loaded, { stream: false })).shutdown();
`,
  );
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("TROUPE_")));
  const child = spawn(process.execPath, ["--import", "tsx", "--import", TRACE, script], { cwd: ROOT, env: { ...clean, MODULE_TRACE: trace }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  expect(code, out).toBe(0);
  return [...new Set((await readFile(trace, "utf8")).split("\n").filter((m) => m.startsWith(`file://${ROOT}`)).map((m) => m.slice(`file://${ROOT}`.length)))];
}

describe("what a runtime loads", () => {
  const tempDir = useTempDirs();

  it("an in-process agent runtime loads none of what only a daemon runs; a daemon loads it", async () => {
    const home = await tempDir();
    // Any URL: neither runtime calls the model here.
    await writeHome(home, "http://127.0.0.1:9/v1", { config: { gateway: { port: 0 } } });
    const agent = await sourcesLoaded("agent", home);
    expect(agent).toContain("src/runtime.ts");
    expect(agent.filter((f) => DAEMON_ONLY.includes(f))).toEqual([]);
    const daemon = await sourcesLoaded("daemon", home);
    expect(DAEMON_ONLY.filter((f) => !daemon.includes(f))).toEqual([]);
  });
});
