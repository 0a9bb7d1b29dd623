import { readFile, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig, parseConfig, saveConfig, defaultConfig } from "../../src/config/index.js";
import { variableAt } from "../../src/config/env.js";
import { ConfigError } from "../../src/errors.js";
import { useTempDirs } from "../helpers/tmp.js";

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error("expected a ConfigError");
}

describe("config", () => {
  const tempDir = useTempDirs();

  it('reads nanobot\'s empty tools.exec.sandbox ("") as the default, and still refuses an unknown value', () => {
    expect(parseConfig({ tools: { exec: { sandbox: "" } } }, "c.json").config.tools.exec.sandbox).toBe("auto");
    expect(problemsOf(() => parseConfig({ tools: { exec: { sandbox: "docker" } } }, "c.json"))[0]).toMatch(/^tools\.exec\.sandbox: /);
  });

  it("takes tools.exec.timeout of 0 (no limit) and above 600, as nanobot v0.3.0 does, and refuses a negative one", () => {
    // nanobot tests/tools/test_tool_validation.py::test_exec_config_timeout_uncapped_and_zero
    expect(parseConfig({ tools: { exec: { timeout: 0 } } }, "c.json").config.tools.exec.timeout).toBe(0);
    expect(parseConfig({ tools: { exec: { timeout: 3600 } } }, "c.json").config.tools.exec.timeout).toBe(3600);
    expect(problemsOf(() => parseConfig({ tools: { exec: { timeout: -1 } } }, "c.json"))[0]).toMatch(/^tools\.exec\.timeout: .*0 for no limit/);
    expect(problemsOf(() => parseConfig({ tools: { exec: { timeout: 1e10 } } }, "c.json"))[0]).toMatch(/^tools\.exec\.timeout: .*0 for no limit/);
  });

  it("accepts camelCase and snake_case keys alike", () => {
    const camel = parseConfig({ agents: { defaults: { maxTokens: 100, maxToolIterations: 3 } } }, "c.json").config;
    const snake = parseConfig({ agents: { defaults: { max_tokens: 100, max_tool_iterations: 3 } } }, "c.json").config;
    expect(snake).toEqual(camel);
    expect(snake.agents.defaults.maxTokens).toBe(100);
  });

  it("keeps user-chosen keys (headers, mcp env) as written", () => {
    const { config } = parseConfig(
      {
        providers: { custom: { api_base: "http://x", extra_headers: { "X_Trace_Id": "1" } } },
        tools: { mcp_servers: { my_server: { command: "node", env: { API_TOKEN: "t" } } } },
      },
      "c.json",
    );
    expect(config.providers.custom?.extraHeaders).toEqual({ X_Trace_Id: "1" });
    expect(config.tools.mcpServers.my_server?.env).toEqual({ API_TOKEN: "t" });
  });

  it("interpolates ${VAR} from the environment and says which variable is missing", () => {
    const { config } = parseConfig({ providers: { openai: { apiKey: "${OPENAI_KEY}" } } }, "c.json", { OPENAI_KEY: "sk-abc" });
    expect(config.providers.openai?.apiKey).toBe("sk-abc");
    const problems = problemsOf(() => parseConfig({ providers: { openai: { apiKey: "${NOPE}" } } }, "c.json", {}));
    expect(problems).toEqual(["providers.openai.apiKey: environment variable NOPE is not set (export it or remove ${NOPE})"]);
  });

  it("applies TROUPE_ env overrides with __ for nesting, parsed as JSON literals", () => {
    const { config } = parseConfig({ gateway: { port: 1 }, providers: { openai: { apiKey: "file" } } }, "c.json", {
      TROUPE_PROVIDERS__OPENAI__API_KEY: "sk-env",
      TROUPE_GATEWAY__PORT: "9999",
      TROUPE_TOOLS__RESTRICT_TO_WORKSPACE: "false",
      TROUPE_HOME: "/ignored",
    });
    expect(config.providers.openai?.apiKey).toBe("sk-env");
    expect(config.gateway.port).toBe(9999);
    expect(config.tools.restrictToWorkspace).toBe(false);
  });

  it("keeps an override's text as given for a string key, even when it reads as a number, boolean or null", () => {
    // nanobot's Config is a pydantic-settings BaseSettings (env_prefix NANOBOT_, env_nested_delimiter "__"): a str
    // field takes the variable's text as it is; only numbers, booleans and complex (list) fields are parsed from it.
    const { config } = parseConfig({ channels: { telegram: { allowFrom: ["1"] } } }, "c.json", {
      TROUPE_PROVIDERS__CUSTOM__API_KEY: "987654321012345",
      NANOBOT_PROVIDERS__OPENAI__API_KEY: "true",
      TROUPE_CHANNELS__TELEGRAM__TOKEN: "null",
      TROUPE_AGENTS__DEFAULTS__MODEL: "00123",
      TROUPE_PROVIDERS__CUSTOM__EXTRA_HEADERS__X_API_KEY: "4711",
      TROUPE_GATEWAY__PORT: "9999",
      TROUPE_TOOLS__RESTRICT_TO_WORKSPACE: "false",
      TROUPE_CHANNELS__TELEGRAM__ALLOW_FROM: '["123456789"]',
    });
    expect(config.providers.custom?.apiKey).toBe("987654321012345");
    expect(config.providers.openai?.apiKey).toBe("true");
    expect(config.channels.telegram.token).toBe("null");
    expect(config.agents.defaults.model).toBe("00123");
    expect(config.providers.custom?.extraHeaders).toEqual({ x_api_key: "4711" });
    expect(config.gateway.port).toBe(9999);
    expect(config.tools.restrictToWorkspace).toBe(false);
    expect(config.channels.telegram.allowFrom).toEqual(["123456789"]);
    // A number field still refuses text that is no number, naming the variable.
    expect(() => parseConfig({}, "c.json", { TROUPE_GATEWAY__PORT: "x" })).toThrow(/environment variable TROUPE_GATEWAY__PORT=x: gateway\.port/);
  });

  it("records which variable set a value, however the file spells the key; TROUPE_ wins over NANOBOT_ and over ${VAR}", () => {
    const { envSources } = parseConfig({ providers: { azure_openai: { api_key: "${AZ_KEY}", apiBase: "${AZ_BASE}" } } }, "c.json", {
      AZ_KEY: "k",
      AZ_BASE: "http://file",
      NANOBOT_PROVIDERS__AZURE_OPENAI__API_KEY: "nb",
      TROUPE_PROVIDERS__AZURE_OPENAI__API_KEY: "tr",
    });
    expect(variableAt(envSources, ["providers", "azureOpenai", "apiKey"])).toEqual({ name: "TROUPE_PROVIDERS__AZURE_OPENAI__API_KEY", override: true });
    expect(variableAt(envSources, ["providers", "azure-openai", "apiBase"])).toEqual({ name: "AZ_BASE", override: false });
    expect(variableAt(envSources, ["providers", "openai", "apiKey"])).toBeUndefined();
  });

  it("warns about unknown keys instead of dropping them silently", () => {
    const { warnings } = parseConfig({ agents: { defaults: { modle: "x" } }, extra: 1 }, "c.json");
    expect(warnings).toEqual([
      "unknown config key agents.defaults.modle is ignored: no nanobot release has it either (did you mean agents.defaults.model?)",
      "unknown config key extra is ignored: no nanobot release has it either (check its spelling)",
    ]);
  });

  it("reports every invalid value with its key path and what was expected", () => {
    const problems = problemsOf(() =>
      parseConfig({ agents: { defaults: { maxTokens: "lots", temperature: 9 } }, gateway: { port: 70000 } }, "c.json"),
    );
    expect(problems).toHaveLength(3);
    expect(problems[0]).toMatch(/^agents\.defaults\.maxTokens: .*expected number, received string/);
    expect(problems[1]).toMatch(/^agents\.defaults\.temperature: .*<=2/);
    expect(problems[2]).toMatch(/^gateway\.port: .*<=65535/);
    expect(problemsOf(() => parseConfig([1, 2], "c.json"))).toEqual(["(root): expected a JSON object"]);
  });

  it("bounds model calls by default, and refuses timeouts a timer cannot hold", () => {
    const d = defaultConfig().agents.defaults;
    expect([d.modelIdleTimeoutSeconds, d.modelTimeoutSeconds, d.maxReplyChars]).toEqual([60, 600, 100_000]);
    const { config } = parseConfig({ agents: { defaults: { model_idle_timeout_seconds: 0.5, modelTimeoutSeconds: 30 } } }, "c.json");
    expect([config.agents.defaults.modelIdleTimeoutSeconds, config.agents.defaults.modelTimeoutSeconds]).toEqual([0.5, 30]);
    const problems = problemsOf(() => parseConfig({ agents: { defaults: { modelIdleTimeoutSeconds: 0, modelTimeoutSeconds: 1e12, sessionIdleSeconds: 1e10 } } }, "c.json"));
    expect(problems.map((p) => p.split(":")[0])).toEqual(["agents.defaults.sessionIdleSeconds", "agents.defaults.modelIdleTimeoutSeconds", "agents.defaults.modelTimeoutSeconds"]);
  });

  it("checks tool patterns and SSRF whitelist entries when the config loads", () => {
    const problems = problemsOf(() =>
      parseConfig({ tools: { exec: { denyPatterns: ["ok", "(unclosed"] }, ssrfWhitelist: ["10.0.0.0/8", "intranet"] } }, "c.json"),
    );
    expect(problems).toEqual([
      "tools.exec.denyPatterns.1: not a valid regular expression",
      "tools.ssrfWhitelist.1: expected an IP address or a CIDR such as 10.0.0.0/8",
    ]);
  });

  it("migrates tools.exec.restrictToWorkspace to tools.restrictToWorkspace", () => {
    const { config, warnings } = parseConfig({ tools: { exec: { restrict_to_workspace: false } } }, "c.json");
    expect(config.tools.restrictToWorkspace).toBe(false);
    expect(warnings).toContain("tools.exec.restrict_to_workspace moved to tools.restrictToWorkspace");
  });

  it("moves the legacy tools.myEnabled / tools.mySet to tools.my as nanobot does, saying what they were for and that troupe ignores them", () => {
    // nanobot: tests/config/test_config_migration.py test_load_config_migrates_legacy_my_tool_keys
    const { warnings } = parseConfig({ tools: { myEnabled: false, mySet: true } }, "c.json");
    const myTool = 'troupe has no "my" tool (nanobot\'s tool with which the agent checks, and with tools.my.allowSet changes, its own runtime settings), so it is ignored';
    expect(warnings).toEqual([
      `tools.myEnabled is nanobot's former name for tools.my.enable: moved there, as nanobot does; ${myTool}`,
      `tools.mySet is nanobot's former name for tools.my.allowSet: moved there, as nanobot does; ${myTool}`,
    ]);
    // Switched on (nanobot's default), the key is among the settings troupe leaves alone, with the reason.
    const on = parseConfig({ tools: { my_enabled: true, mySet: true } }, "c.json").warnings;
    expect(on.filter((w) => !w.startsWith("tools.my"))).toEqual([
      'not supported by troupe yet, ignored: tools: my [nanobot\'s "my" tool (the agent checking and changing its own runtime settings), which troupe does not have]',
    ]);
    // tools.my set already wins, as in nanobot; the legacy key is dropped all the same.
    expect(parseConfig({ tools: { my: { enable: false }, myEnabled: true } }, "c.json").warnings).toEqual([
      `tools.myEnabled is ignored: tools.my.enable is set; ${myTool}`,
    ]);
  });

  it("refuses __proto__ and constructor keys as config errors naming the key path", async () => {
    const parsed = (text: string) => JSON.parse(text) as unknown;
    expect(problemsOf(() => parseConfig(parsed('{"__proto__": {"polluted": true}}'), "c.json"))).toEqual([
      "__proto__: a key named __proto__ is not allowed (it could change how every object behaves); remove it",
    ]);
    expect(problemsOf(() => parseConfig(parsed('{"agents": {"defaults": {"constructor": 1}}, "providers": {"x": {"__proto__": {}}}}'), "c.json"))).toEqual([
      "agents.defaults.constructor: a key named constructor is not allowed (it could change how every object behaves); remove it",
      "providers.x.__proto__: a key named __proto__ is not allowed (it could change how every object behaves); remove it",
    ]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const home = await tempDir();
    await writeFile(join(home, "config.json"), '{"tools": {"constructor": {"x": 1}}}');
    const err = await loadConfig({ TROUPE_HOME: home }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).exitCode).toBe(2);
    expect((err as Error).message).toMatch(/config error in .*config\.json: tools\.constructor: a key named constructor is not allowed/);
  });

  it("says which file and where when the JSON does not parse", async () => {
    const home = await tempDir();
    await writeFile(join(home, "config.json"), '{\n  "agents": {\n    "defaults": { "model": "x", }\n  }\n}\n');
    const err = await loadConfig({ TROUPE_HOME: home }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(new RegExp(`config error in ${join(home, "config.json")}: not valid JSON at line 3, column \\d+`));
  });

  it("uses defaults without a file and resolves the workspace under the data dir", async () => {
    const home = await tempDir();
    const loaded = await loadConfig({ TROUPE_HOME: home });
    expect(loaded.fromFile).toBe(false);
    expect(loaded.workspace).toBe(join(home, "workspace"));
    expect(loaded.config).toEqual(defaultConfig());
    const custom = await (async () => {
      await writeFile(join(home, "config.json"), JSON.stringify({ agents: { defaults: { workspace: "ws2" } } }));
      return loadConfig({ TROUPE_HOME: home });
    })();
    expect(custom.workspace).toBe(join(home, "ws2"));
  });

  it("writes atomically, leaving no temp file behind", async () => {
    const home = await tempDir();
    const file = join(home, "config.json");
    await saveConfig(file, defaultConfig());
    expect(JSON.parse(await readFile(file, "utf8"))).toEqual(defaultConfig());
    expect(await readdir(home)).toEqual(["config.json"]);
  });
});
