import { existsSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { basename, join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Logger } from "pino";
import { resolveUserPath } from "../paths.js";
import { HOOK_POINTS, type AgentHook } from "./hook.js";

/** What a hook module's default-export factory is called with (once, when troupe starts). */
export interface HookFactoryContext {
  workspace: string;
  logger: Pick<Logger, "info" | "warn" | "error">;
}

export type AgentHookFactory = (ctx: HookFactoryContext) => AgentHook | Promise<AgentHook>;

export interface LoadHooksOptions {
  /** agents.defaults.hooks: module paths (`~` expands; relative ones are taken against the workspace). */
  configured: readonly string[];
  workspace: string;
  logger: Pick<Logger, "info" | "warn" | "error">;
}

const HOOK_FILE = /\.(m?js)$/;

/** Where the workspace's hook modules live; the agent's tools may read it but never write it (src/tools/sandbox.ts). */
export const workspaceHooksDir = (workspace: string) => join(workspace, "hooks");

/** The workspace's hooks/ folder: its *.js and *.mjs files, by name. */
async function workspaceHookFiles(workspace: string): Promise<string[]> {
  const dir = workspaceHooksDir(workspace);
  const names = await readdir(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return [] as string[];
    throw err;
  });
  return names.filter((n) => HOOK_FILE.test(n)).sort().map((n) => join(dir, n));
}

/** A module's default export as a hook: an object with hook points, or a factory returning one. */
async function hookFrom(path: string, ctx: HookFactoryContext): Promise<AgentHook> {
  const mod = (await import(pathToFileURL(path).href)) as { default?: unknown };
  let value = mod.default;
  if (value === undefined) throw new Error("it has no default export; export default an object with hook methods, or a function returning one");
  if (typeof value === "function") value = await (value as AgentHookFactory)(ctx);
  if (typeof value !== "object" || value === null) throw new Error(`its default export gave ${value === null ? "null" : typeof value}, not an object with hook methods`);
  const hook = value as Record<string, unknown>;
  const wrong = HOOK_POINTS.filter((p) => hook[p] !== undefined && typeof hook[p] !== "function");
  if (wrong.length) throw new Error(`${wrong.join(", ")} must be a function`);
  if (!HOOK_POINTS.some((p) => typeof hook[p] === "function")) throw new Error(`it has none of the hook points (${HOOK_POINTS.join(", ")})`);
  // Methods are called on the module's own object (a class instance keeps its state in `this`).
  const bound: Record<string, unknown> = { name: typeof hook.name === "string" && hook.name ? hook.name : basename(path) };
  for (const point of HOOK_POINTS) {
    const fn = hook[point];
    if (typeof fn === "function") bound[point] = (fn as (...args: unknown[]) => unknown).bind(value);
  }
  return bound as AgentHook;
}

/** The hook modules troupe would load, in order, each with whether its file exists (for `troupe status`: nothing is imported). */
export async function hookFiles(configured: readonly string[], workspace: string): Promise<Array<{ path: string; exists: boolean }>> {
  const paths = [...new Set([...configured.map((p) => resolveUserPath(p, workspace)), ...(await workspaceHookFiles(workspace))])];
  return paths.map((path) => ({ path, exists: existsSync(path) }));
}

/**
 * The hooks of this troupe, in the order they run: those agents.defaults.hooks lists, in its order,
 * then the workspace's hooks/ files by name. A module that cannot be loaded is logged (what is
 * wrong, and how to fix it) and left out; the others still run.
 */
export async function loadHooks(opts: LoadHooksOptions): Promise<AgentHook[]> {
  const paths = [...opts.configured.map((p) => resolveUserPath(p, opts.workspace)), ...(await workspaceHookFiles(opts.workspace))];
  const hooks: AgentHook[] = [];
  const seen = new Set<string>();
  for (const path of paths) {
    if (seen.has(path)) continue;
    seen.add(path);
    try {
      hooks.push(await hookFrom(path, { workspace: opts.workspace, logger: opts.logger }));
    } catch (err) {
      const why = (err as NodeJS.ErrnoException).code === "ERR_MODULE_NOT_FOUND" ? "the file does not exist" : err instanceof Error ? err.message : String(err);
      opts.logger.error({ hook: path }, `hook ${path} not loaded: ${why}. Fix the module, or remove it from agents.defaults.hooks / the workspace's hooks/ folder`);
    }
  }
  if (hooks.length) opts.logger.info({ hooks: hooks.map((h) => h.name) }, `${hooks.length} hook(s) loaded`);
  return hooks;
}
