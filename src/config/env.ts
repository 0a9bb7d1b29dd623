/**
 * `${VAR}` interpolation and TROUPE_ env overrides. Both act on the raw JSON before the schema
 * sees it, so an interpolated or overridden value is validated like any other.
 */

import { isPlainObject, snakeToCamel as camelOf } from "./normalize.js";

/** A `${VAR}` in config.json: the variable's name and the key path (as the file spells it) it fills. */
export interface EnvReference {
  name: string;
  path: string[];
}

export function interpolateEnv(
  value: unknown,
  env: NodeJS.ProcessEnv,
  problems: string[],
  path: string[] = [],
  used: EnvReference[] = [],
): unknown {
  if (typeof value === "string") {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => {
      const v = env[name];
      used.push({ name, path });
      if (v === undefined) {
        problems.push(`${path.join(".") || "(root)"}: environment variable ${name} is not set (export it or remove \${${name}})`);
        return "";
      }
      return v;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolateEnv(v, env, problems, [...path, String(i)], used));
  if (isPlainObject(value)) {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, interpolateEnv(v, env, problems, [...path, k], used)]),
    );
  }
  return value;
}

/** A JSON literal (number, boolean, array, null) when the text is one, else the text itself. */
function parseEnvValue(text: string): unknown {
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? text : parsed;
  } catch {
    return text;
  }
}

/** One TROUPE_…__… variable applied to the config: its name, its value, and the key path it set (camelCase). */
export interface EnvOverride {
  name: string;
  value: string;
  path: string[];
}

/**
 * TROUPE_PROVIDERS__OPENAI__API_KEY=sk-... sets providers.openai.api_key (snake_case is accepted
 * downstream), and so does nanobot's NANOBOT_PROVIDERS__OPENAI__API_KEY. Only names with `__`
 * count, so TROUPE_HOME and TROUPE_FAULT are not config.
 */
export function applyEnvOverrides(raw: Record<string, unknown>, env: NodeJS.ProcessEnv): EnvOverride[] {
  const applied: EnvOverride[] = [];
  // nanobot's NANOBOT_…__… variables are read too; TROUPE_ ones come last, so they win.
  const prefixOf = (name: string) => ["NANOBOT_", "TROUPE_"].find((p) => name.startsWith(p));
  const ordered = Object.entries(env).sort(([a], [b]) => Number(a.startsWith("TROUPE_")) - Number(b.startsWith("TROUPE_")));
  for (const [name, text] of ordered) {
    const prefix = prefixOf(name);
    if (!prefix || !name.includes("__") || text === undefined) continue;
    const segments = name.slice(prefix.length).toLowerCase().split("__").filter(Boolean);
    if (segments.length === 0) continue;
    let node: Record<string, unknown> = raw;
    for (const seg of segments.slice(0, -1)) {
      const next = node[seg] ?? node[camelOf(seg)];
      if (!isPlainObject(next)) node[seg] = {};
      node = (isPlainObject(next) ? next : node[seg]) as Record<string, unknown>;
    }
    const leaf = segments[segments.length - 1] as string;
    // The override wins over whichever spelling the file used.
    delete node[camelOf(leaf)];
    node[leaf] = parseEnvValue(text);
    applied.push({ name, value: text, path: segments.map(camelOf) });
  }
  return applied;
}

/** The text of the override that set exactly `path` (however the key is spelt; the last applied wins). */
export function overrideTextAt(overrides: EnvOverride[], path: string[]): string | undefined {
  return overrides.filter((o) => samePath(o.path, path)).at(-1)?.value;
}

/** Which override a problem at `path` (camelCase, as the schema reports it) comes from, if any. */
export function overrideAt(overrides: EnvOverride[], path: string[]): EnvOverride | undefined {
  const within = (outer: string[], inner: string[]) => outer.every((seg, i) => inner[i] === seg);
  return overrides.find((o) => within(o.path, path) || within(path, o.path));
}

/** How an override is named in an error: with its value, unless the name says it holds a secret. */
export const describeOverride = (o: EnvOverride) => (/KEY|TOKEN|SECRET|PASSWORD/i.test(o.name) ? o.name : `${o.name}=${o.value}`);

/** Which environment variables gave the config its values: TROUPE_/NANOBOT_ overrides and `${VAR}` references in the file. */
export interface EnvSources {
  overrides: EnvOverride[];
  references: EnvReference[];
}

/** One key however it is spelt (api_key, apiKey; azure_openai, azure-openai, azureOpenai). */
const sameKey = (a: string, b: string) => a.replace(/[-_]/g, "").toLowerCase() === b.replace(/[-_]/g, "").toLowerCase();
const samePath = (a: string[], b: string[]) => a.length === b.length && a.every((seg, i) => sameKey(seg, b[i] as string));

/** The variable that set the value at `path`: an override (the last applied wins, as in applyEnvOverrides), else a `${VAR}` in the file. */
export function variableAt(sources: EnvSources | undefined, path: string[]): { name: string; override: boolean } | undefined {
  const override = sources?.overrides.filter((o) => samePath(o.path, path)).at(-1);
  if (override) return { name: override.name, override: true };
  const ref = sources?.references.find((r) => samePath(r.path, path));
  return ref ? { name: ref.name, override: false } : undefined;
}
