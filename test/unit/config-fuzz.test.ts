import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { defaultConfig, loadConfig } from "../../src/config/index.js";
import { ConfigError } from "../../src/errors.js";
import { createPrng, type Prng } from "../helpers/prng.js";
import { useTempDirs } from "../helpers/tmp.js";

/**
 * Random config files and TROUPE_ overrides: loading one either succeeds or throws ConfigError,
 * never another error. Seeded, so a failing case is the same on every run (its index is in the message).
 */

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Every key path of the schema: the defaults, plus one entry in each user-keyed record. */
function knownPaths(): string[][] {
  const sample = defaultConfig() as unknown as Record<string, unknown>;
  const withRecords = {
    ...sample,
    providers: { openai: { apiKey: "", apiBase: null, extraHeaders: { "X-A": "b" } } },
    tools: { ...(sample.tools as object), mcpServers: { s: { command: "", args: [], env: { A: "b" }, url: "", headers: {}, toolTimeout: 30 } } },
  };
  const out: string[][] = [];
  const walk = (v: unknown, path: string[]) => {
    if (path.length) out.push(path);
    if (isObject(v)) for (const [k, child] of Object.entries(v)) walk(child, [...path, k]);
  };
  walk(withRecords, []);
  return out;
}

const snake = (k: string) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const TRICKY_KEYS = ["__proto__", "constructor", "prototype", "toString", "hasOwnProperty", "valueOf", "__defineGetter__", "", "a.b", "${X}"];

function deep(depth: number, leaf: unknown): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { a: v };
  return v;
}

/** An object with an own key that a literal or an assignment cannot make (`__proto__`). */
function withKey(key: string, value: unknown, base: Record<string, unknown> = {}): Record<string, unknown> {
  Object.defineProperty(base, key, { value, enumerable: true, writable: true, configurable: true });
  return base;
}

function oddValue(r: Prng, depth = 0): unknown {
  switch (r.int(depth > 2 ? 8 : 12)) {
    case 0:
      return null;
    case 1:
      return r.pick([0, -1, 1.5, 65_536, 1e21, -1e308, 1e308, 2 ** 53 + 2, Number.MAX_SAFE_INTEGER, 0.1]);
    case 2:
      return r.pick(["", "x", "0", "true", "null", "[]", "{}", "-5", "${HOME}", "${NOPE_UNSET}", "${", "~", "(unclosed", "10.0.0.0/99", "x".repeat(5000)]);
    case 3:
      return r.pick([true, false]);
    case 4:
      return [];
    case 5:
      return {};
    case 6:
      return withKey(r.pick(TRICKY_KEYS), oddValue(r, depth + 1));
    case 7:
      return withKey("__proto__", { polluted: true, apiKey: "x", enabled: true });
    case 8:
      return Array.from({ length: 1 + r.int(3) }, () => oddValue(r, depth + 1));
    case 9:
      return withKey(r.pick(["openai", "custom", "s", "telegram", "defaults"]), oddValue(r, depth + 1));
    case 10:
      return deep(r.pick([50, 500, 2_000]), r.pick([1, "x", null]));
    default:
      return withKey("constructor", withKey("prototype", { polluted: true }));
  }
}

/** Sets `value` at `path`, making (or replacing) objects on the way. */
function setAt(root: Record<string, unknown>, path: string[], value: unknown) {
  let node = root;
  for (const seg of path.slice(0, -1)) {
    const next = Object.hasOwn(node, seg) ? node[seg] : undefined;
    if (!isObject(next)) withKey(seg, {}, node);
    node = node[seg] as Record<string, unknown>;
  }
  withKey(path[path.length - 1]!, value, node);
}

function oddConfig(r: Prng, paths: string[][]): Record<string, unknown> {
  const root: Record<string, unknown> = r.chance(0.3) ? (structuredClone(defaultConfig()) as unknown as Record<string, unknown>) : {};
  for (let i = 1 + r.int(5); i > 0; i--) {
    const path = [...r.pick(paths)];
    if (r.chance(0.3)) path[path.length - 1] = snake(path[path.length - 1]!);
    if (r.chance(0.15)) path.push(r.pick(TRICKY_KEYS));
    if (r.chance(0.1)) path.splice(r.int(path.length), 0, r.pick(TRICKY_KEYS));
    setAt(root, path, oddValue(r));
  }
  return root;
}

function oddEnv(r: Prng, paths: string[][]): Record<string, string> {
  const env: Record<string, string> = {};
  for (let i = r.int(3); i > 0; i--) {
    const path = r.chance(0.2) ? [r.pick(["constructor", "prototype", "to_string", "proto"]), "x"] : r.pick(paths);
    const name = `TROUPE_${path.map((p) => snake(p).toUpperCase()).join("__")}`;
    env[name] = r.pick(["1", "-1", "1e400", "true", "null", "[]", "[1,{}]", '{"a":1}', "text", "", "${NOPE}", '"quoted"']);
  }
  return env;
}

describe("config fuzz", () => {
  const tmp = useTempDirs();

  it("loading a random config either succeeds or says what is wrong as a ConfigError", async () => {
    const random = createPrng(513);
    const paths = knownPaths();
    const home = await tmp();
    const outcomes = { loaded: 0, refused: 0 };
    for (let i = 0; i < 600; i++) {
      const raw = r0(random, i) ?? oddConfig(random, paths);
      await writeFile(join(home, "config.json"), typeof raw === "string" ? raw : JSON.stringify(raw));
      const env = { TROUPE_HOME: home, ...oddEnv(random, paths) };
      try {
        await loadConfig(env);
        outcomes.loaded++;
      } catch (err) {
        if (!(err instanceof ConfigError)) {
          throw new Error(`case ${i}: ${(err as Error).name}: ${(err as Error).message}\nconfig: ${JSON.stringify(raw).slice(0, 500)}\nenv: ${JSON.stringify(env)}`, { cause: err });
        }
        // A problem an override caused is listed under the variable's name, the rest under the file.
        expect(err.problems.length + err.envProblems.length, `case ${i}`).toBeGreaterThan(0);
        outcomes.refused++;
      }
      // Nothing leaked onto the prototypes every object shares.
      expect(({} as Record<string, unknown>).polluted, `case ${i}`).toBeUndefined();
    }
    // Both outcomes occur (most random configs are wrong somewhere, so fewer load).
    expect(outcomes.loaded).toBeGreaterThan(5);
    expect(outcomes.refused).toBeGreaterThan(100);
  }, 120_000);

  it("says so when config.json cannot be read", async () => {
    const home = await tmp();
    await mkdir(join(home, "config.json"));
    const err = await loadConfig({ TROUPE_HOME: home }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/config error in .*config\.json: cannot read it \(EISDIR/);
  });
});

/** Some cases are whole files rather than objects: not JSON, not an object, nested past reason. */
function r0(r: Prng, i: number): string | undefined {
  if (i % 10 !== 0) return undefined;
  return r.pick(["", "null", "[]", "42", '"text"', "{", '{"agents": }', "\u0000", `${'{"agents":'.repeat(20_000)}1${"}".repeat(20_000)}`, `{"agents":${"[".repeat(100_000)}`]);
}
