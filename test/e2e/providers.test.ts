import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { writeConfig } from "../helpers/daemon.js";

/** nanobot's default config as its onboard writes it: the default model, every provider listed, keys empty. */
function nanobotDefault(providers: Record<string, unknown>) {
  const empty = { apiKey: "", apiBase: null, extraHeaders: null };
  const listed = Object.fromEntries(["custom", "azureOpenai", "anthropic", "openai", "openrouter", "deepseek", "groq", "zhipu", "dashscope", "gemini", "moonshot", "minimax", "vllm"].map((n) => [n, empty]));
  return {
    agents: { defaults: { model: "anthropic/claude-opus-4-5", provider: "auto", maxTokens: 8192, temperature: 0.1 } },
    providers: { ...listed, ...providers },
    gateway: { host: "127.0.0.1", port: 0 },
  };
}

describe("providers as a nanobot user configures them (real processes, fake model over loopback)", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  closeAfterEach(() => [fake]);

  async function home(config: unknown): Promise<string> {
    const dir = await tempDir();
    await writeConfig(dir, config);
    return dir;
  }

  it("nanobot's default config with only providers.anthropic.apiKey talks to Anthropic's OpenAI-compatible endpoint", async () => {
    fake = await startFakeOpenAi([{ content: "Hello from Claude." }]);
    // The api base is the fake server's: tests never reach the internet.
    const dir = await home(nanobotDefault({ anthropic: { apiKey: "sk-ant-api03-test", apiBase: fake.url } }));
    const status = await runCli(["status"], { TROUPE_HOME: dir });
    expect(status.stdout).toContain(`provider:  auto → anthropic at ${fake.url} (model sent as claude-opus-4-5)`);
    const r = await runCli(["agent", "-m", "hi"], { TROUPE_HOME: dir });
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("Hello from Claude.\n");
    expect(fake.requests[0]?.body.model).toBe("claude-opus-4-5");
    expect(fake.requests[0]?.headers.authorization).toBe("Bearer sk-ant-api03-test");
  });

  it("with no model configured and only an Anthropic key, nanobot's default model is used (not troupe's OpenAI one)", async () => {
    fake = await startFakeOpenAi([{ content: "Claude here." }]);
    const dir = await home({ providers: { anthropic: { apiKey: "sk-ant-api03-test", apiBase: fake.url } } });
    const status = await runCli(["status"], { TROUPE_HOME: dir });
    expect(status.stdout).toContain("model:     anthropic/claude-opus-4-5 (none configured: anthropic's default)");
    const r = await runCli(["agent", "-m", "hi"], { TROUPE_HOME: dir });
    expect(r.stdout).toBe("Claude here.\n");
    expect(fake.requests[0]?.body.model).toBe("claude-opus-4-5");
  });

  it.each([
    ["no key at all", {}, 'no LLM provider configured for model "anthropic/claude-opus-4-5" (Anthropic\'s): set providers.anthropic.apiKey in CONFIG, or export TROUPE_PROVIDERS__ANTHROPIC__API_KEY'],
    ["only an OpenAI key", { openai: { apiKey: "sk-proj-test" } }, 'model "anthropic/claude-opus-4-5" is Anthropic\'s, but providers.anthropic.apiKey is not set (providers.openai cannot serve it): set it, or export TROUPE_PROVIDERS__ANTHROPIC__API_KEY'],
  ])("with %s, status, agent and gateway each say to set providers.anthropic.apiKey", async (_what, providers, message) => {
    const dir = await home(nanobotDefault(providers));
    const expected = message.replace("CONFIG", join(dir, "config.json"));
    const status = await runCli(["status"], { TROUPE_HOME: dir });
    expect(status.stdout).toContain(`provider:  auto → not ready: ${expected}`);
    expect(status.stdout).not.toContain("providers.openai.apiKey");
    for (const args of [["agent", "-m", "hi"], ["gateway"]]) {
      const r = await runCli(args, { TROUPE_HOME: dir });
      expect(r.code, args.join(" ")).not.toBe(0);
      expect(r.stderr, args.join(" ")).toContain(expected);
      expect(r.stderr).not.toContain("providers.openai.apiKey");
    }
  });
});
