import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { writeConfig } from "../helpers/daemon.js";

/**
 * A nanobot user's data dir, moved over as is: a v0.2-style config.json (nulls for unused providers,
 * a model preset on a provider they named, channels troupe does not have, one real typo) and skills
 * in nanobot's and OpenClaw's formats, some of them malformed. The real CLI reads them.
 */

const MISSING_BIN = "troupe-test-no-such-cli";

const SKILLS: Record<string, string> = {
  weather: `---\nname: weather\ndescription: Get current weather and forecasts (no API key required).\nmetadata: {"nanobot":{"emoji":"🌤️","requires":{"bins":["curl"]}}}\n---\n# Weather\n\nWEATHER-SKILL-BODY: curl wttr.in/Paris?format=3`,
  github: `---\nname: github\ndescription: Interact with GitHub using the CLI.\nmetadata:\n  openclaw:\n    requires:\n      bins: [${MISSING_BIN}]\n---\n# GitHub\n`,
  poly: `---\nname: clawhub\ndescription: Trade on prediction markets.\n---\n# Poly\n`,
  notes: `---\nname: notes\ndescription: Notes: quick ones\n---\n# Notes\n`,
  brokenreq: `---\nname: brokenreq\ndescription: Declares its binary as a string.\nalways: true\nrequires:\n  bins: gh\n---\nBROKEN-ALWAYS-BODY`,
  disabledone: `---\nname: disabledone\ndescription: Left out by disabledSkills.\n---\n`,
};

describe("a nanobot user's config and skills, through the CLI", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let gateway: GatewayProcess | undefined;
  closeAfterEach(() => [gateway, fake]);

  async function nanobotHome(apiBase: string): Promise<string> {
    const home = await tempDir();
    await writeConfig(home, {
      agents: {
        defaults: {
          modelPreset: "main",
          model: "anthropic/claude-opus-4-5",
          reasoningEffort: null,
          disabledSkills: ["disabledone"],
          dream: { intervalH: 4 },
          maxToolResultChars: 20_000,
          maxTokenz: 5,
        },
      },
      model_presets: { main: { model: "fake-model", provider: "my-endpoint", reasoningEffort: "max", temperature: 0.3 } },
      providers: {
        my_endpoint: { apiKey: "sk-test", apiBase },
        openai: { apiKey: null, apiBase: null, extraHeaders: null, apiType: "auto" },
        anthropic: { apiKey: null },
      },
      channels: { discord: { enabled: true, token: "t" }, whatsapp: { enabled: false }, sendMaxRetries: 3 },
      gateway: { port: 0, heartbeat: { enabled: true, intervalS: 600 } },
    });
    for (const [folder, text] of Object.entries(SKILLS)) {
      await mkdir(join(home, "workspace", "skills", folder), { recursive: true });
      await writeFile(join(home, "workspace", "skills", folder, "SKILL.md"), text);
    }
    return home;
  }

  it("status: loads it, names what troupe does not support in one line, and exits 1 for the enabled channel it cannot run", async () => {
    const home = await nanobotHome("http://127.0.0.1:9/v1");
    const r = await runCli(["status"], { TROUPE_HOME: home });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^model: +fake-model \(preset main\)$/m);
    expect(r.stdout).toMatch(/^provider: +my_endpoint at http:\/\/127\.0\.0\.1:9\/v1 \(model sent as fake-model\)$/m);
    expect(r.stdout).toMatch(/^not run: +channels\.discord enabled, but troupe cannot run it yet/m);
    expect(r.stdout).toMatch(/^skills: .*unavailable: github \(CLI: troupe-test-no-such-cli\).*broken: brokenreq \(requires\.bins must be a list of names, not the text "gh" \(write \[gh\]\)\)/m);
    expect(r.stdout).not.toContain("disabledone");

    const warnings = r.stderr.split("\n").filter(Boolean);
    expect(warnings.filter((w) => w.includes("no nanobot release"))).toEqual([
      "warning: unknown config key agents.defaults.maxTokenz is ignored: no nanobot release has it either (did you mean agents.defaults.maxTokens?)",
    ]);
    expect(warnings).toContain(
      "warning: not supported by troupe yet, ignored: channels: discord (enabled: it will not run) [troupe runs Telegram and its control API only]",
    );
    expect(warnings).toContain("warning: agents.defaults.maxToolResultChars is read as tools.maxToolResultChars (where troupe keeps it)");
    const skillsDir = join(home, "workspace", "skills");
    expect(warnings).toContain(`warning: ${join(skillsDir, "poly", "SKILL.md")}: its frontmatter name "clawhub" differs from its folder; the skill is named "poly" after the folder`);
    expect(warnings.filter((w) => w.includes(join(skillsDir, "notes")))).toEqual([
      expect.stringMatching(/: the frontmatter is not valid YAML \(.+\); its fields were recovered line by line$/),
    ]);
    expect(r.stderr).not.toMatch(/expected string, received null/);
  });

  it("agent: a turn goes through; the prompt lists skills as nanobot does, and $weather brings that skill's text into the turn", async () => {
    fake = await startFakeOpenAi([{ content: "Sunny in Paris." }]);
    const home = await nanobotHome(fake.url);
    const r = await runCli(["agent", "-m", "$weather in Paris?"], { TROUPE_HOME: home });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("Sunny in Paris.\n");

    const body = fake.requests[0]?.body as { model: string; reasoning_effort?: string; temperature?: number; messages: Array<{ role: string; content: unknown }> };
    // The preset's reasoning effort; as in nanobot, a model given one gets no temperature (the preset's 0.3 is not sent).
    expect([body.model, body.reasoning_effort, body.temperature]).toEqual(["fake-model", "max", undefined]);
    const system = String(body.messages[0]?.content);
    const skillsDir = join(home, "workspace", "skills");
    expect(system).toContain(`- **github** — Interact with GitHub using the CLI. (unavailable: CLI: ${MISSING_BIN})  \`${join(skillsDir, "github", "SKILL.md")}\``);
    expect(system).toContain("- **poly** — Trade on prediction markets.");
    expect(system).toContain("- **notes** — Notes: quick ones");
    expect(system).toMatch(/- \*\*brokenreq\*\* — Declares its binary as a string\. \(broken: requires\.bins must be a list/);
    expect(system).not.toContain("BROKEN-ALWAYS-BODY");
    expect(system).not.toContain("disabledone");
    expect(system).not.toContain("WEATHER-SKILL-BODY");

    const user = String(body.messages.at(-1)?.content);
    expect(user).toContain("[Skill: weather, loaded because the message names $weather]\n# Weather\n\nWEATHER-SKILL-BODY");
    expect(user.endsWith("$weather in Paris?")).toBe(true);

    // The session keeps the message as the user wrote it, and the log says once which skill files needed recovery.
    const shown = await runCli(["sessions", "show", "cli:direct"], { TROUPE_HOME: home });
    expect(shown.stdout).toContain("$weather in Paris?");
    expect(shown.stdout).not.toContain("WEATHER-SKILL-BODY");
    const logs = await Promise.all((await readdir(join(home, "logs"))).map((f) => readFile(join(home, "logs", f), "utf8")));
    expect(logs.join("\n").match(/notes\/SKILL\.md: the frontmatter is not valid YAML/g)).toHaveLength(1);
  });

  it("gateway: serves, and says that the enabled channel troupe cannot run will not start", async () => {
    const home = await nanobotHome("http://127.0.0.1:9/v1");
    gateway = await startGateway(home);
    expect(gateway.output()).toContain("warning: enabled in config but troupe cannot run channels.discord: it will not start");
    const stopped = gateway.exited;
    gateway.proc.kill("SIGTERM");
    expect((await stopped).code).toBe(0);
    gateway = undefined;
  });
});
