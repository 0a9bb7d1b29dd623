import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { ConfigError } from "../errors.js";
import { dataPaths, resolveUserPath, type DataPaths } from "../paths.js";
import { applyEnvOverrides, describeOverride, interpolateEnv, overrideAt, overrideTextAt, type EnvReference, type EnvSources } from "./env.js";
import { nanobotAcceptsNull, reportUnknownKeys } from "./known-keys.js";
import { migrateConfig } from "./migrate.js";
import { applyModelPreset } from "./presets.js";
import { isPlainObject, normalizeKeys, snakeToCamel } from "./normalize.js";
import { configSchema, type Config } from "./schema.js";

export interface LoadedConfig {
  config: Config;
  paths: DataPaths;
  /** The workspace with `~` and relative paths resolved. */
  workspace: string;
  /** Whether config.json exists (a missing file means defaults). */
  fromFile: boolean;
  warnings: string[];
  /** channels.<name> enabled in the file that troupe cannot run (nanobot's other channels, plugins). */
  unrunnableChannels?: string[];
  /** The environment variables that set values (troupe doctor names them). */
  envSources?: EnvSources;
}

/** Line and column of a character offset, for "which file and where" on unparseable JSON. */
function lineCol(text: string, offset: number): { line: number; col: number } {
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  return { line, col: offset - before.lastIndexOf("\n") };
}

export function parseJsonFile(text: string, file: string): unknown {
  if (text.startsWith("\uFEFF")) {
    // nanobot refuses it too ("Unexpected UTF-8 BOM").
    throw new ConfigError(file, [
      `starts with a UTF-8 byte order mark (BOM), which JSON does not allow: save it as UTF-8 without BOM (e.g. sed -i '1s/^\xEF\xBB\xBF//' ${file})`,
    ]);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    const message = (err as Error).message;
    const pos = /position (\d+)/.exec(message);
    const where = pos ? lineCol(text, Number(pos[1])) : undefined;
    const detail = message.replace(/\s*\(line \d+ column \d+\)/, "").replace(/ in JSON at position \d+/, "");
    throw new ConfigError(file, [
      `not valid JSON${where ? ` at line ${where.line}, column ${where.col}` : ""}: ${detail}`,
    ]);
  }
}

function describeIssue(issue: { path: PropertyKey[]; message: string }): string {
  const path = issue.path.map(String).join(".") || "(root)";
  return `${path}: ${issue.message}`;
}

/** Deeper than any real config: past it the recursive steps below would run out of stack. */
const MAX_DEPTH = 32;

/** The path of the first value nested deeper than `max`, found without recursion. */
function tooDeep(raw: unknown, max: number): string | undefined {
  const stack: Array<{ value: unknown; path: string[] }> = [{ value: raw, path: [] }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (path.length > max) return path.slice(0, max + 1).join(".");
    if (typeof value === "object" && value !== null) {
      for (const [k, v] of Object.entries(value)) stack.push({ value: v, path: [...path, k] });
    }
  }
  return undefined;
}

/** Keys that would reach Object.prototype when the config is copied or walked. */
const FORBIDDEN_KEYS = ["__proto__", "constructor"];

/** Key paths of forbidden keys anywhere in the raw JSON (JSON.parse keeps `__proto__` as an own key). */
function forbiddenKeys(value: unknown, path: string[] = []): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => forbiddenKeys(v, [...path, String(i)]));
  if (!isPlainObject(value)) return [];
  return Object.keys(value).flatMap((key) =>
    FORBIDDEN_KEYS.includes(key)
      ? [`${[...path, key].join(".")}: a key named ${key} is not allowed (it could change how every object behaves); remove it`]
      : forbiddenKeys(value[key], [...path, key]),
  );
}

/** Turns raw JSON into a valid Config, or throws ConfigError listing every problem. */
export function parseConfig(
  raw: unknown,
  file: string,
  env: NodeJS.ProcessEnv = {},
): { config: Config; warnings: string[]; unrunnableChannels: string[]; envSources: EnvSources } {
  if (!isPlainObject(raw)) throw new ConfigError(file, ["(root): expected a JSON object"]);
  const deep = tooDeep(raw, MAX_DEPTH);
  if (deep) throw new ConfigError(file, [`${deep}: nested more than ${MAX_DEPTH} levels deep`]);
  const forbidden = forbiddenKeys(raw);
  if (forbidden.length > 0) throw new ConfigError(file, forbidden);
  const problems: string[] = [];
  const warnings: string[] = [];
  const migrated = migrateConfig(structuredClone(raw), warnings);
  const references: EnvReference[] = [];
  const interpolated = interpolateEnv(migrated, env, problems, [], references) as Record<string, unknown>;
  const overrides = applyEnvOverrides(interpolated, env);
  const unknownKeys: string[] = [];
  const siblings = new Map<string, string[]>();
  // nanobot takes null for its optional fields (its onboard writes "apiKey": null): null there means the default.
  const envText = overrides.length ? (path: string[]) => overrideTextAt(overrides, path) : undefined;
  const normalized = normalizeKeys(configSchema, interpolated, [], unknownKeys, { siblings, dropNull: nanobotAcceptsNull, envText });
  const report = reportUnknownKeys(
    unknownKeys,
    interpolated,
    (path) => siblings.get(path.join(".")) ?? [],
    (key, suggestion) => {
      const override = overrideAt(overrides, key.split(".").map(snakeToCamel));
      const hint = suggestion ? `did you mean ${[...key.split(".").slice(0, -1), suggestion].join(".")}?` : "check its spelling";
      return override
        ? `environment variable ${override.name} sets unknown config key ${key}; it is ignored (${hint})`
        : `unknown config key ${key} is ignored: no nanobot release has it either (${hint})`;
    },
  );
  warnings.push(...report.warnings);
  // Parsed once per process: without zod's JIT, which would generate and compile a parser for each of
  // the config's objects first (~7 ms of a cold `troupe agent -m`, the same result and issues).
  const result = configSchema.safeParse(normalized, { jitless: true });
  // A value an environment variable set is that variable's problem: the file may be fine.
  const envProblems: string[] = [];
  for (const issue of result.error?.issues ?? []) {
    const override = overrideAt(overrides, issue.path.map(String));
    if (override) envProblems.push(`${describeOverride(override)}: ${describeIssue(issue)}`);
    else problems.push(describeIssue(issue));
  }
  if (problems.length > 0 || envProblems.length > 0 || !result.success) throw new ConfigError(file, problems, envProblems);
  const presetProblems: string[] = [];
  const config = applyModelPreset(result.data, presetProblems);
  if (presetProblems.length > 0) throw new ConfigError(file, presetProblems);
  return { config, warnings, unrunnableChannels: report.unrunnableChannels, envSources: { overrides, references } };
}

export async function loadConfig(env: NodeJS.ProcessEnv = process.env): Promise<LoadedConfig> {
  const paths = dataPaths(env);
  let text: string | undefined;
  try {
    text = await readFile(paths.configFile, "utf8");
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code !== "ENOENT") throw new ConfigError(paths.configFile, [`cannot read it (${e.code ?? e.message})`]);
  }
  const raw = text === undefined ? {} : parseJsonFile(text, paths.configFile);
  const { config, warnings, unrunnableChannels, envSources } = parseConfig(raw, paths.configFile, env);
  const workspace = config.agents.defaults.workspace
    ? resolveUserPath(config.agents.defaults.workspace, paths.dataDir)
    : paths.defaultWorkspace;
  return { config, paths, workspace, fromFile: text !== undefined, warnings, unrunnableChannels, envSources };
}

/** Writes atomically (temp file + rename), so a crash never leaves half a config. */
export async function writeFileAtomic(file: string, data: string, mode?: number): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  await writeFile(tmp, data, { mode });
  await rename(tmp, file);
}

/** Mode 600: config.json holds API keys and tokens. */
export async function saveConfig(file: string, config: Config): Promise<void> {
  await writeFileAtomic(file, `${JSON.stringify(config, null, 2)}\n`, 0o600);
}
