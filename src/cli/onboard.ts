import { copyFile, mkdir, readdir } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join, relative } from "node:path";
import { defaultConfig, saveConfig, type LoadedConfig } from "../config/index.js";
import { WORKSPACE_TEMPLATES_DIR } from "../context/templates.js";

export interface OnboardResult {
  configCreated: boolean;
  created: string[];
  kept: string[];
  configFile: string;
  workspace: string;
}

async function templateFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await templateFiles(full)));
    else out.push(full);
  }
  return out.sort();
}

/** Writes config.json (if absent) and fills the workspace, never overwriting a user's file. */
export async function onboard(loaded: LoadedConfig): Promise<OnboardResult> {
  let configCreated = false;
  if (!loaded.fromFile) {
    await saveConfig(loaded.paths.configFile, defaultConfig());
    configCreated = true;
  }
  const created: string[] = [];
  const kept: string[] = [];
  for (const src of await templateFiles(WORKSPACE_TEMPLATES_DIR)) {
    const rel = relative(WORKSPACE_TEMPLATES_DIR, src);
    const dest = join(loaded.workspace, rel);
    if (existsSync(dest)) {
      kept.push(rel);
      continue;
    }
    await mkdir(join(dest, ".."), { recursive: true });
    await copyFile(src, dest);
    created.push(rel);
  }
  await mkdir(join(loaded.workspace, "skills"), { recursive: true });
  await mkdir(loaded.paths.logsDir, { recursive: true });
  await mkdir(loaded.paths.mediaDir, { recursive: true });
  return { configCreated, created, kept, configFile: loaded.paths.configFile, workspace: loaded.workspace };
}
