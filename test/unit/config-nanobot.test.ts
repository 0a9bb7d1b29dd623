import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig, parseConfig } from "../../src/config/index.js";
import { classifyKey, isInert, nanobotAcceptsNull } from "../../src/config/known-keys.js";
import { NANOBOT_KEYS, NANOBOT_LATEST } from "../../src/config/nanobot-keys.js";
import { ConfigError } from "../../src/errors.js";
import { createOpenAiProvider } from "../../src/providers/client.js";
import { resolveProvider } from "../../src/providers/registry.js";
import { openStore } from "../../src/store/store.js";
import { createBuiltinTools } from "../../src/tools/builtin/index.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { startFakeWeb } from "../fixtures/fake-web.js";
import { toolCtx } from "../helpers/tools.js";
import { useTempDirs } from "../helpers/tmp.js";

/** The config a nanobot user copies over, as nanobot writes and reads it. */

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error("expected a ConfigError");
}

const typos = (warnings: string[]) => warnings.filter((w) => w.includes("no nanobot release"));

describe("nanobot configs: null", () => {
  it('takes "apiKey": null for every provider, as nanobot\'s own onboard writes it', () => {
    const raw = { providers: { openai: { apiKey: null, apiBase: null, extraHeaders: null }, deepseek: { apiKey: "sk-d", apiBase: null } } };
    const { config, warnings } = parseConfig(raw, "c.json");
    expect(config.providers.openai?.apiKey).toBe("");
    expect(config.providers.deepseek?.apiKey).toBe("sk-d");
    expect(warnings).toEqual([]);
  });

  it("takes null where nanobot's field is optional (meaning its default), and still refuses it where nanobot does", () => {
    const { config } = parseConfig({ agents: { defaults: { modelPreset: null, reasoningEffort: null } }, tools: { web: { proxy: null } } }, "c.json");
    expect(config.agents.defaults.modelPreset).toBeNull();
    expect(nanobotAcceptsNull(["providers", "openai", "apiKey"])).toBe(true);
    expect(nanobotAcceptsNull(["agents", "defaults", "max_tokens"])).toBe(false);
    expect(problemsOf(() => parseConfig({ agents: { defaults: { maxTokens: null } } }, "c.json"))[0]).toMatch(/^agents\.defaults\.maxTokens: /);
  });
});

describe("nanobot configs: values", () => {
  it.each(["low", "medium", "high", "xhigh", "max", "adaptive", "none", "minimal", "MAX"])("takes reasoningEffort %s", (effort) => {
    const { config } = parseConfig({ agents: { defaults: { reasoningEffort: effort } } }, "c.json");
    expect(config.agents.defaults.reasoningEffort).toBe(effort.toLowerCase());
  });

  it("refuses a reasoningEffort nanobot does not know, naming the ones it does", () => {
    expect(problemsOf(() => parseConfig({ agents: { defaults: { reasoningEffort: "extreme" } } }, "c.json"))[0]).toMatch(/reasoningEffort.*"xhigh"/);
  });

  it("refuses a numeric allowFrom as nanobot does, saying to quote it", () => {
    const [problem] = problemsOf(() => parseConfig({ channels: { telegram: { allowFrom: [12345] } } }, "c.json"));
    expect(problem).toBe('channels.telegram.allowFrom.0: expected a string: write the id in quotes ("12345")');
  });

  it("refuses a file that starts with a UTF-8 BOM, saying how to remove it", async () => {
    const home = await tempDir();
    await writeFile(join(home, "config.json"), '\uFEFF{"agents": {}}');
    await expect(loadConfig({ TROUPE_HOME: home })).rejects.toThrow(/byte order mark \(BOM\).*save it as UTF-8 without BOM/);
  });

  const tempDir = useTempDirs();
});

describe("nanobot configs: a key left out means what it means in nanobot", () => {
  /** troupe's defaults that differ from nanobot's on purpose, each with its reason (README says each). */
  const OWN_DEFAULTS: Record<string, string> = {
    "agents.defaults.model": "with no model configured troupe picks one for the key it finds (nanobot's own default with only an Anthropic key)",
    "agents.defaults.workspace": "empty: <data dir>/workspace (a nanobot workspace is used when named)",
    "agents.defaults.maxConcurrentSubagents": "troupe runs subagents in parallel (4), nanobot one at a time",
    "agents.defaults.contextWindowTokens": "65,536 fits every model troupe picks by default (gpt-4o-mini takes 128k); nanobot's 200,000 fits its Claude default",
    "tools.restrictToWorkspace": "file tools stay in the workspace unless told otherwise",
    "tools.exec.sandbox": "exec runs under bubblewrap where it is installed",
    "tools.web.search.provider": "brave with a key, else DuckDuckGo (nanobot's default): the same without a key",
  };
  const at = (o: unknown, path: string[]) => path.reduce<unknown>((a, k) => (a && typeof a === "object" ? (a as Record<string, unknown>)[k] : undefined), o);

  it(`every default troupe shares with nanobot ${NANOBOT_LATEST} is nanobot's, bar the listed ones`, () => {
    const { config } = parseConfig({}, "c.json");
    const differ: string[] = [];
    for (const [key, [, , last, nanobotDefault]] of Object.entries(NANOBOT_KEYS)) {
      if (last !== NANOBOT_LATEST || nanobotDefault === undefined || key.includes("*") || key in OWN_DEFAULTS) continue;
      const ours = at(config, key.split("."));
      if (ours !== undefined && JSON.stringify(ours) !== JSON.stringify(nanobotDefault)) differ.push(`${key}: troupe ${JSON.stringify(ours)}, nanobot ${JSON.stringify(nanobotDefault)}`);
    }
    expect(differ).toEqual([]);
    // The listed ones are still troupe's keys with a default of their own (a stale entry would hide nothing).
    for (const key of Object.keys(OWN_DEFAULTS)) expect(JSON.stringify(at(config, key.split(".")))).not.toBe(JSON.stringify(NANOBOT_KEYS[key]?.[3]));
  });
});

describe("nanobot configs: keys troupe does not use", () => {
  it("names nanobot's keys in one grouped 'not supported by troupe yet' line, never as typos", () => {
    const raw = {
      agents: { defaults: { dream: { intervalH: 4 }, unifiedSession: true, failOnToolError: false } },
      gateway: { heartbeat: { enabled: true, intervalS: 600 } },
      channels: { sendMaxRetries: 5, discord: { enabled: true, token: "t" }, telegram: { enabled: false, inlineKeyboards: true } },
      tools: { mcpServers: { fs: { command: "npx", enabled_tools: ["read"] } } },
      api: { port: 9000 },
    };
    const { warnings, unrunnableChannels } = parseConfig(raw, "c.json");
    expect(typos(warnings)).toEqual([]);
    expect(warnings).toHaveLength(1);
    const [line] = warnings;
    expect(line).toMatch(/^not supported by troupe yet, ignored: /);
    for (const part of ["agents.defaults: unifiedSession, failOnToolError", "discord (enabled: it will not run)", "channels.telegram: inlineKeyboards", "(top level): api"]) {
      expect(line).toContain(part);
    }
    expect(unrunnableChannels).toEqual(["channels.discord"]);
  });

  it("says in that one line why each is left alone", () => {
    const raw = {
      agents: { defaults: { idleCompactAfterMinutes: 30, consolidationRatio: 0.3, botName: "bob", unifiedSession: true } },
      channels: { sendMaxRetries: 5, slack: { enabled: true }, telegram: { enabled: false, webhookUrl: "https://x.example/tg", poolTimeout: 9 } },
      providers: { openai: { apiType: "responses" } },
      api: { port: 9000 },
    };
    const { warnings } = parseConfig(raw, "c.json");
    expect(warnings).toHaveLength(1);
    const line = warnings[0]!;
    // troupe compacts idle sessions as nanobot does (idleCompactAfterMinutes is read, not reported).
    expect(line).not.toContain("idleCompactAfterMinutes");
    for (const part of [
      "agents.defaults: consolidationRatio [troupe consolidates a session over its token budget (agents.defaults.contextWindowTokens) down to half of it, not to a ratio]",
      "agents.defaults: botName [for nanobot's web UI, which troupe does not have (its inspector is at /inspector)]",
      "channels: slack (enabled: it will not run) [troupe runs Telegram and its control API only]",
      "channels.telegram: webhookUrl [troupe's Telegram channel long-polls, it has no webhook]",
      "channels.telegram: poolTimeout [troupe's Telegram client keeps its own connections]",
      "providers.openai: apiType [troupe speaks the OpenAI-compatible chat API to every provider]",
      "(top level): api [nanobot's OpenAI-compatible API server, where troupe has its control API (gateway.host, gateway.port)]",
    ]) {
      expect(line).toContain(part);
    }
    // A setting of all channels is not a channel, and what has no particular reason is said to be not built yet.
    expect(line).toMatch(/agents\.defaults: unifiedSession; channels: sendMaxRetries \[not built in troupe yet\]/);
  });

  it("honours gateway.restartMode (how /restart starts the next gateway)", () => {
    const { config, warnings } = parseConfig({ gateway: { restartMode: "exit" } }, "c.json");
    expect(config.gateway.restartMode).toBe("exit");
    expect(warnings).toEqual([]);
  });

  it("leaves out what asks for nothing beyond nanobot's defaults (disabled channels, empty or default values)", () => {
    const raw = {
      channels: { whatsapp: { enabled: false, bridgeUrl: "ws://localhost:3001" }, sendMaxRetries: 3 },
      providers: { openai: { apiKey: null, apiType: "auto", extraBody: null, extraQuery: null } },
      tools: { web: { search: { baseUrl: "" } } },
    };
    const { warnings, unrunnableChannels } = parseConfig(raw, "c.json");
    expect(warnings).toEqual([]);
    expect(unrunnableChannels).toEqual([]);
    expect(isInert(["channels", "whatsapp"], { enabled: false })).toBe(true);
    expect(isInert(["channels", "sendMaxRetries"], 5)).toBe(false);
  });

  it("takes any channels.<name> as a third-party channel plugin; an enabled one will not run", () => {
    const { warnings, unrunnableChannels } = parseConfig({ channels: { webchat: { enabled: true, port: 8080 }, rabbitmq: { enabled: false } } }, "c.json");
    expect(warnings).toEqual(["channel plugins troupe cannot load, ignored: channels: webchat (enabled: it will not run)"]);
    expect(unrunnableChannels).toEqual(["channels.webchat"]);
  });

  it("says which keys nanobot itself retired", () => {
    const { warnings } = parseConfig({ agents: { defaults: { memoryWindow: 50 } } }, "c.json");
    expect(warnings).toEqual(["retired by nanobot and ignored (remove them): agents.defaults.memoryWindow (last in nanobot v0.1.4.post5)"]);
  });

  it("calls only keys of no nanobot release possible typos, with a did-you-mean from troupe's and nanobot's keys", () => {
    const { warnings } = parseConfig({ agents: { defaults: { maxToken: 10, disabledSkils: [] } }, channels: { telegarm: { enabled: true } }, gateway: { hearbeat: {} } }, "c.json");
    expect(warnings).toEqual([
      "unknown config key agents.defaults.maxToken is ignored: no nanobot release has it either (did you mean agents.defaults.maxTokens?)",
      "unknown config key agents.defaults.disabledSkils is ignored: no nanobot release has it either (did you mean agents.defaults.disabledSkills?)",
      "unknown config key channels.telegarm is ignored: no nanobot release has it either (did you mean channels.telegram?)",
      "unknown config key gateway.hearbeat is ignored: no nanobot release has it either (did you mean gateway.heartbeat?)",
    ]);
    expect(classifyKey(["providers", "vllm", "temperature"])).toEqual({ kind: "typo", suggestion: undefined });
    expect(classifyKey(["providers", "my-proxy", "extraBody"]).kind).toBe("nanobot");
  });

  it("reads nanobot's agents.defaults.maxToolResultChars as tools.maxToolResultChars", () => {
    const { config, warnings } = parseConfig({ agents: { defaults: { max_tool_result_chars: 32_000 } } }, "c.json");
    expect(config.tools.maxToolResultChars).toBe(32_000);
    expect(warnings).toEqual(["agents.defaults.max_tool_result_chars is read as tools.maxToolResultChars (where troupe keeps it)"]);
  });

  it("reads nanobot's NANOBOT_…__… environment overrides; a TROUPE_ one for the same key wins", () => {
    expect(parseConfig({}, "c.json", { NANOBOT_AGENTS__DEFAULTS__MODEL: "from-nanobot" }).config.agents.defaults.model).toBe("from-nanobot");
    const both = { TROUPE_AGENTS__DEFAULTS__MODEL: "from-troupe", NANOBOT_AGENTS__DEFAULTS__MODEL: "from-nanobot", NANOBOT_PROVIDERS__OPENAI__API_KEY: "sk-n" };
    const { config } = parseConfig({ agents: { defaults: { model: "from-file" } } }, "c.json", both);
    expect([config.agents.defaults.model, config.providers.openai?.apiKey]).toEqual(["from-troupe", "sk-n"]);
    expect(() => parseConfig({}, "c.json", { NANOBOT_GATEWAY__PORT: "x" })).toThrow(/environment variable NANOBOT_GATEWAY__PORT=x: gateway\.port/);
  });

  it("honours tools.exec.enable and tools.web.enable", () => {
    const { config, warnings } = parseConfig({ tools: { exec: { enable: false }, web: { enable: false } } }, "c.json");
    expect(config.tools.exec.enable).toBe(false);
    expect(config.tools.web.enable).toBe(false);
    expect(warnings).toEqual([]);
  });
});

describe("nanobot configs: model presets", () => {
  const providers = { deepseek: { apiKey: "sk-d" }, openrouter: { apiKey: "sk-or-x" } };

  it("agents.defaults.modelPreset takes the preset's model, provider and settings (nanobot's defaults for the rest)", () => {
    const raw = {
      agents: { defaults: { model_preset: "fast", model: "anthropic/claude-opus-4-5", maxTokens: 100 } },
      model_presets: { fast: { model: "deepseek-chat", provider: "deepseek", reasoningEffort: "max" } },
      providers,
    };
    const { config, warnings } = parseConfig(raw, "c.json");
    expect(warnings).toEqual([]);
    const d = config.agents.defaults;
    expect([d.model, d.provider, d.maxTokens, d.contextWindowTokens, d.temperature, d.reasoningEffort]).toEqual(["deepseek-chat", "deepseek", 8192, 200_000, 0.1, "max"]);
    const r = resolveProvider(config);
    expect([r.spec.name, r.apiBase, r.model]).toEqual(["deepseek", "https://api.deepseek.com/v1", "deepseek-chat"]);
  });

  it('modelPreset "default" (or none) keeps agents.defaults', () => {
    const raw = { agents: { defaults: { modelPreset: "default", model: "deepseek-chat" } }, modelPresets: { other: { model: "x" } }, providers };
    expect(parseConfig(raw, "c.json").config.agents.defaults.model).toBe("deepseek-chat");
  });

  it("refuses a preset name that is not defined, and a preset named default, as nanobot does", () => {
    expect(problemsOf(() => parseConfig({ agents: { defaults: { modelPreset: "fats" } }, modelPresets: { fast: { model: "x" } } }, "c.json"))).toEqual([
      'agents.defaults.modelPreset: "fats" is not in modelPresets (it has fast); add it there or remove modelPreset',
    ]);
    expect(problemsOf(() => parseConfig({ modelPresets: { default: { model: "x" } } }, "c.json"))[0]).toMatch(/"default" is reserved/);
  });

  it("routes a preset to a provider the user named under providers (a custom OpenAI-compatible endpoint)", () => {
    const raw = {
      agents: { defaults: { modelPreset: "main" } },
      modelPresets: { main: { provider: "deepseek_main", model: "deepseek-v4-flash" } },
      providers: { deepseek_main: { apiKey: "sk-d", apiBase: "https://api.deepseek.com/v1" } },
    };
    const r = resolveProvider(parseConfig(raw, "c.json").config);
    expect([r.spec.name, r.apiBase, r.apiKey, r.model]).toEqual(["deepseek_main", "https://api.deepseek.com/v1", "sk-d", "deepseek-v4-flash"]);
  });
});

describe("nanobot configs: what the values do", () => {
  let fake: FakeOpenAi | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  it.each([
    ["max", "max"],
    ["xhigh", "xhigh"],
    ["none", undefined],
  ])("reasoningEffort %s is sent as %s", async (effort, wire) => {
    fake = await startFakeOpenAi([{ content: "ok" }]);
    const provider = createOpenAiProvider(
      { spec: { name: "custom", displayName: "c", defaultApiBase: null, keywords: [] }, apiKey: "k", apiBase: fake.url, extraHeaders: {}, model: "m" },
      { maxTokens: 10, temperature: 0, stream: false, reasoningEffort: effort },
    );
    await provider.chat({ messages: [{ role: "user", content: "hi" }], tools: [] });
    expect((fake.requests[0]?.body as { reasoning_effort?: string }).reasoning_effort).toBe(wire);
  });

  it("tools.exec.enable and tools.web.enable false leave those tools out", async () => {
    const dir = await tempDir();
    const store = await openStore(join(dir, "store"));
    try {
      const names = (raw: unknown) =>
        createBuiltinTools({ config: parseConfig(raw, "c.json").config, workspace: dir, paths: { dataDir: dir, mediaDir: join(dir, "media"), configFile: join(dir, "c.json") }, store, channels: () => [] }).map((t) => t.name);
      expect(names({})).toEqual(expect.arrayContaining(["exec", "web_fetch", "web_search"]));
      const off = names({ tools: { exec: { enable: false }, web: { enable: false } } });
      expect(off).not.toContain("exec");
      expect(off).not.toContain("web_fetch");
      expect(off).not.toContain("web_search");
      expect(off).toContain("read_file");
    } finally {
      await store.close();
    }
  });

  it("tools.web.search (provider, apiKey, baseUrl, maxResults, timeout), tools.web.proxy and userAgent reach the web tools", async () => {
    const raw = { tools: { web: { proxy: null, userAgent: "ua-from-config", search: { provider: "searxng", baseUrl: "", maxResults: 3, timeout: 10 } } } };
    expect(parseConfig(raw, "c.json").warnings).toEqual([]);
    const dir = await tempDir();
    const store = await openStore(join(dir, "store"));
    const agents: string[] = [];
    const web = await startFakeWeb({
      "/searx/search": (req, res) => {
        agents.push(String(req.headers["user-agent"]));
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ results: [1, 2, 3, 4].map((i) => ({ title: `R${i}`, url: `https://r/${i}`, content: "" })) }));
      },
    });
    try {
      raw.tools.web.search.baseUrl = `${web.origin}/searx`;
      const tools = createBuiltinTools({ config: parseConfig(raw, "c.json").config, workspace: dir, paths: { dataDir: dir, mediaDir: join(dir, "media"), configFile: join(dir, "c.json") }, store, channels: () => [], env: {} });
      const search = tools.find((t) => t.name === "web_search")!;
      const out = await search.execute({ query: "q" }, toolCtx(dir));
      expect(out).toBe("Results for: q\n\n1. R1\n   https://r/1\n2. R2\n   https://r/2\n3. R3\n   https://r/3");
      expect(agents).toEqual(["ua-from-config"]);
      expect(web.hits).toEqual(["/searx/search?q=q&format=json"]);
    } finally {
      await web.close();
      await store.close();
    }
  });

  const tempDir = useTempDirs();
});
