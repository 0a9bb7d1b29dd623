import { existsSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { zipSync } from "fflate";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { SKIP_BWRAP } from "../helpers/bwrap.js";
import { runCli } from "../helpers/cli.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { writeConfig } from "../helpers/daemon.js";

/** Where the bundled CLI finds its built-in skills: templates/skills under the package root. */
const BUILTIN = fileURLToPath(new URL("../../templates/skills/", import.meta.url));
const CREATOR = join(BUILTIN, "skill-creator", "scripts");

describe("built-in skills through the bundled CLI", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  closeAfterEach(() => [fake]);

  // Restricted to the workspace, in the sandbox and without it: a built-in skill's script may be run
  // by its path (read-only), and what it makes lands in the workspace.
  it.skipIf(SKIP_BWRAP).each(["bwrap", "none"])("lists every built-in skill with its path, loads $weather, and runs skill-creator's scripts (sandbox %s)", async (sandbox) => {
    fake = await startFakeOpenAi([
      {
        toolCalls: [
          { name: "exec", arguments: { command: `node ${join(CREATOR, "init-skill.mjs")} trip-notes --resources scripts --examples` } },
          { name: "exec", arguments: { command: `node ${join(CREATOR, "validate-skill.mjs")} skills/trip-notes` } },
        ],
      },
      { content: "Scaffolded trip-notes." },
    ]);
    const home = await tempDir();
    await writeConfig(home, {
      agents: { defaults: { provider: "custom", model: "fake-model" } },
      providers: { custom: { apiBase: fake.url } },
      tools: { restrictToWorkspace: true, exec: { sandbox } },
    });
    const r = await runCli(["agent", "-m", "$weather, and make me a skill for trip notes"], { TROUPE_HOME: home, TROUPE_PROVIDERS__CUSTOM__API_KEY: "sk-e2e" });
    expect(r.stderr).toBe("");
    expect([r.code, r.stdout]).toEqual([0, "Scaffolded trip-notes.\n"]);

    const first = fake.requests[0]?.body.messages ?? [];
    const system = String(first[0]?.content);
    const shipped = (await readdir(BUILTIN)).sort();
    expect(shipped).toEqual(["clawhub", "cron", "github", "memory", "skill-creator", "summarize", "tmux", "weather"]);
    for (const name of shipped.filter((n) => n !== "memory")) {
      expect(system).toMatch(new RegExp(`^- \\*\\*${name}\\*\\* — .+\`${join(BUILTIN, name, "SKILL.md").replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}\`$`, "m"));
    }
    expect(system).toContain("### Skill: memory"); // always-on: in full
    const user = String(first.at(-1)?.content);
    expect(user).toContain("[Skill: weather, loaded because the message names $weather]\n# Weather");
    expect(user).toContain("wttr.in");

    const results = (fake.requests[1]?.body.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content));
    const ws = join(home, "workspace");
    expect(results[0]).toContain(`created ${join(ws, "skills", "trip-notes")}`);
    expect(results[0]).toMatch(/Exit code: 0$/);
    expect(results[1]).toContain("description still has the TODO placeholder");
    expect(results[1]).toMatch(/Exit code: 1$/);
    expect(existsSync(join(ws, "skills", "trip-notes", "scripts", "example.mjs"))).toBe(true);
  });

  // In the sandbox the only way out is troupe's egress proxy: the installer must go through it.
  it.skipIf(SKIP_BWRAP)("clawhub installs a skill from a registry through the sandbox's egress proxy", async () => {
    const archive = zipSync({ "SKILL.md": new TextEncoder().encode("---\nname: trip\ndescription: Trip notes from the registry.\n---\nKeep notes.\n") });
    const hits: string[] = [];
    const registry = createServer((req, res) => {
      hits.push(req.url ?? "");
      if (req.url?.startsWith("/api/v1/download?slug=trip")) res.writeHead(200, { "content-type": "application/zip" }).end(Buffer.from(archive));
      else res.writeHead(404).end("no such skill");
    });
    await new Promise<void>((r) => registry.listen(0, "127.0.0.1", r));
    try {
      const origin = `http://127.0.0.1:${(registry.address() as AddressInfo).port}`;
      fake = await startFakeOpenAi([
        { toolCalls: [{ name: "exec", arguments: { command: `node ${join(BUILTIN, "clawhub", "scripts", "clawhub.mjs")} install trip --registry ${origin}` } }] },
        { content: "Installed." },
      ]);
      const home = await tempDir();
      await writeConfig(home, {
        agents: { defaults: { provider: "custom", model: "fake-model" } },
        providers: { custom: { apiBase: fake.url } },
        // The registry is on loopback, which the proxy refuses unless whitelisted.
        tools: { restrictToWorkspace: true, exec: { sandbox: "bwrap" }, ssrfWhitelist: ["127.0.0.1"] },
      });
      const r = await runCli(["agent", "-m", "install the trip skill"], { TROUPE_HOME: home, TROUPE_PROVIDERS__CUSTOM__API_KEY: "sk-e2e" });
      expect([r.code, r.stdout, r.stderr]).toEqual([0, "Installed.\n", ""]);
      const result = String((fake.requests[1]?.body.messages ?? []).find((m) => m.role === "tool")?.content);
      expect(result).toContain(`installed ${join(home, "workspace", "skills", "trip")} (1 file): Trip notes from the registry.`);
      expect(hits).toEqual(["/api/v1/download?slug=trip"]);
      expect(existsSync(join(home, "workspace", "skills", "trip", "SKILL.md"))).toBe(true);
    } finally {
      await new Promise<void>((r) => registry.close(() => r()));
    }
  });
});
