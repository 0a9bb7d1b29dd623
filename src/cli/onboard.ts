import { copyFile, mkdir, readdir, stat } from "node:fs/promises";
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
  /** One line each, with the command that fixes it. */
  warnings: string[];
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

/** Writes config.json (if absent, private to its owner) and fills the workspace, never overwriting a user's file. */
export async function onboard(loaded: LoadedConfig): Promise<OnboardResult> {
  // A data dir created here is private; an existing one keeps its mode (and is warned about).
  await mkdir(loaded.paths.dataDir, { recursive: true, mode: 0o700 });
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
  const warnings = await privacyWarnings(loaded);
  return { configCreated, created, kept, configFile: loaded.paths.configFile, workspace: loaded.workspace, warnings };
}
