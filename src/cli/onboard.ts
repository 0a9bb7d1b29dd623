import { mkdir, readFile, stat } from "node:fs/promises";
import { createInterface } from "node:readline";
import { defaultConfig, parseJsonFile, writeFileAtomic, type LoadedConfig } from "../config/index.js";
import { isPlainObject } from "../config/normalize.js";
import { fillWorkspace } from "../context/templates.js";
import { TroupeError } from "../errors.js";
import { PROVIDERS, providerSpec, resolveProvider } from "../providers/registry.js";

export interface OnboardResult {
  /** What happened to config.json: written with defaults, written with the answers given, merged into, or left alone. */
  config: "created" | "wrote" | "updated" | "kept";
  /** Whether a provider is ready to use (else the caller says what to set). */
  providerReady: boolean;
  created: string[];
  kept: string[];
  configFile: string;
  workspace: string;
  /** One line each, with the command that fixes it. */
  warnings: string[];
}

/** The provider, endpoint, key and model a person chose. */
export interface ProviderAnswers {
  provider: string;
  apiBase: string | null;
  apiKey: string;
  model: string;
}

/** Ctrl-C or Ctrl-D at a question: nothing has been created or changed yet (the questions come first). */
class OnboardStopped extends TroupeError {
  override readonly exitCode = 130;
  constructor() {
    super("onboard stopped: nothing was set up (no file or directory was created or changed); run troupe onboard again to set troupe up");
  }
}

/** A model each provider serves, offered as the default answer (none where no name is safe to guess). */
const DEFAULT_MODELS: Record<string, string> = {
  openai: "gpt-4o-mini",
  anthropic: "anthropic/claude-opus-4-5",
  openrouter: "openai/gpt-4o-mini",
  deepseek: "deepseek-chat",
  groq: "llama-3.3-70b-versatile",
  moonshot: "moonshot-v1-8k",
  dashscope: "qwen-plus",
  zhipu: "glm-4-flash",
  gemini: "gemini-2.0-flash",
  ollama: "llama3.1",
};

/** One line of input (readline: editing keys work); rejects on Ctrl-C or Ctrl-D. */
function ask(query: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: true });
    let answered = false;
    rl.on("SIGINT", () => rl.close());
    rl.on("close", () => {
      if (answered) return;
      process.stdout.write("\n");
      reject(new OnboardStopped());
    });
    rl.question(query, (answer) => {
      answered = true;
      rl.close();
      resolve(answer.trim());
    });
  });
}

/** One line typed without echo (an API key must not stay on the screen); rejects on Ctrl-C, or Ctrl-D on an empty line. */
function askSecret(query: string): Promise<string> {
  const input = process.stdin;
  process.stdout.write(query);
  input.setRawMode(true);
  input.setEncoding("utf8");
  input.resume();
  return new Promise((resolve, reject) => {
    let value = "";
    const done = (err?: Error) => {
      input.off("data", onData);
      input.setRawMode(false);
      input.pause();
      process.stdout.write("\n");
      if (err) reject(err);
      else resolve(value.trim());
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === "\r" || ch === "\n") return done();
        if (ch === "\x03" || (ch === "\x04" && !value)) return done(new OnboardStopped());
        if (ch === "\x7f" || ch === "\b") value = value.slice(0, -1);
        else if (ch >= " ") value += ch;
      }
    };
    input.on("data", onData);
  });
}

const isHttpUrl = (s: string) => {
  try {
    return ["http:", "https:"].includes(new URL(s).protocol);
  } catch {
    return false;
  }
};

/** Asks for the provider, its endpoint (where it has no fixed one), the key and the model. */
export async function askProvider(current: { provider: string; model: string }): Promise<ProviderAnswers> {
  const names = PROVIDERS.filter((p) => p.name !== "custom" && !p.unsupported).map((p) => p.name);
  const suggested = current.provider !== "auto" && providerSpec(current.provider) ? current.provider : "openai";
  let spec;
  while (!spec) {
    const answer = (await ask(`Provider [${suggested}] (${[...names, "custom"].join(", ")}): `)) || suggested;
    spec = providerSpec(answer.toLowerCase());
    if (!spec) console.log(`troupe does not know ${answer}; pick one of the list (custom = any OpenAI-compatible endpoint)`);
  }
  let apiBase: string | null = null;
  if (!spec.defaultApiBase || spec.isLocal) {
    for (;;) {
      const answer = (await ask(`API base URL${spec.defaultApiBase ? ` [${spec.defaultApiBase}]` : " (your OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1)"}: `)) || spec.defaultApiBase || "";
      if (isHttpUrl(answer)) {
        apiBase = answer === spec.defaultApiBase ? null : answer;
        break;
      }
      console.log("an http:// or https:// URL, please");
    }
  }
  let apiKey = "";
  for (;;) {
    apiKey = await askSecret(`API key for ${spec.displayName} (typing is hidden${spec.isLocal ? "; Enter for none" : ""}): `);
    if (apiKey || spec.isLocal) break;
    console.log(`${spec.displayName} needs a key`);
  }
  const suggestedModel = current.provider === spec.name ? current.model : DEFAULT_MODELS[spec.name];
  let model = "";
  while (!model) model = (await ask(`Model${suggestedModel ? ` [${suggestedModel}]` : ""}: `)) || suggestedModel || "";
  return { provider: spec.name, apiBase, apiKey, model };
}

/** Sets the answers in a raw config object, replacing either spelling of each key and keeping everything else. */
function applyAnswers(raw: Record<string, unknown>, a: ProviderAnswers): Record<string, unknown> {
  const section = (parent: Record<string, unknown>, key: string) => {
    if (!isPlainObject(parent[key])) parent[key] = {};
    return parent[key] as Record<string, unknown>;
  };
  const defaults = section(section(raw, "agents"), "defaults");
  defaults.provider = a.provider;
  defaults.model = a.model;
  const provider = section(section(raw, "providers"), a.provider);
  delete provider.api_key;
  delete provider.api_base;
  provider.apiKey = a.apiKey;
  if (a.apiBase) provider.apiBase = a.apiBase;
  return raw;
}

const providerReady = (loaded: LoadedConfig) => {
  try {
    resolveProvider(loaded.config, loaded.paths.configFile);
    return true;
  } catch {
    return false;
  }
};

/** config.json is private: it holds API keys. */
const CONFIG_MODE = 0o600;
const configText = (config: unknown) => `${JSON.stringify(config, null, 2)}\n`;

/** config.json holds API keys and the data dir the gateway token: only their owner should reach them. */
async function privacyWarnings(loaded: LoadedConfig): Promise<string[]> {
  const { configFile, dataDir } = loaded.paths;
  const open = async (path: string) => {
    const mode = (await stat(path).catch(() => undefined))?.mode;
    return mode !== undefined && (mode & 0o077) !== 0 ? (mode & 0o777).toString(8) : undefined;
  };
  const warnings: string[] = [];
  const configMode = await open(configFile);
  if (configMode) warnings.push(`warning: ${configFile} (API keys, tokens) is open to other users (mode ${configMode}); run: chmod 600 ${configFile}`);
  const dirMode = await open(dataDir);
  if (dirMode) warnings.push(`warning: the data dir ${dataDir} is open to other users (mode ${dirMode}); run: chmod 700 ${dataDir}`);
  return warnings;
}

/**
 * Writes config.json (private to its owner) and fills the workspace, never overwriting a user's
 * file. On a terminal (`interactive`), when no provider is usable yet, it asks for the provider, key
 * and model and writes them (into the existing file too, keeping the rest of it); without one it
 * writes defaults if there is no config.json. It asks before it creates anything, so a person who
 * stops at a question (Ctrl-C, Ctrl-D) is left with what they had.
 */
export async function onboard(loaded: LoadedConfig, opts: { interactive?: boolean } = {}): Promise<OnboardResult> {
  const file = loaded.paths.configFile;
  let config: OnboardResult["config"] = "kept";
  let ready = providerReady(loaded);
  const answers = opts.interactive && !ready ? await askProvider(loaded.config.agents.defaults) : undefined;
  // A data dir created here is private; an existing one keeps its mode (and is warned about).
  await mkdir(loaded.paths.dataDir, { recursive: true, mode: 0o700 });
  if (answers) {
    const raw = loaded.fromFile ? parseJsonFile(await readFile(file, "utf8"), file) : defaultConfig();
    await writeFileAtomic(file, configText(applyAnswers(raw as Record<string, unknown>, answers)), CONFIG_MODE);
    config = loaded.fromFile ? "updated" : "wrote";
    ready = true;
  } else if (!loaded.fromFile) {
    await writeFileAtomic(file, configText(defaultConfig()), CONFIG_MODE);
    config = "created";
  }
  const { created, kept } = await fillWorkspace(loaded.workspace);
  await mkdir(loaded.paths.logsDir, { recursive: true });
  await mkdir(loaded.paths.mediaDir, { recursive: true });
  const warnings = await privacyWarnings(loaded);
  return { config, providerReady: ready, created, kept, configFile: file, workspace: loaded.workspace, warnings };
}
