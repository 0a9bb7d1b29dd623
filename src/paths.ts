import { homedir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";

/** Every file troupe owns lives under one data dir: ~/.troupe, $TROUPE_HOME, or the directory of `--config`. */
export interface DataPaths {
  dataDir: string;
  configFile: string;
  storeDir: string;
  logsDir: string;
  mediaDir: string;
  tokenFile: string;
  pidFile: string;
  defaultWorkspace: string;
}

export function expandHome(p: string): string {
  if (p === "~") return homedir();
  if (p.startsWith("~/")) return join(homedir(), p.slice(2));
  return p;
}

/**
 * The data dir and its files. TROUPE_CONFIG (what `--config PATH` sets) names the config file; as in
 * nanobot, the instance's data then lives beside it unless TROUPE_HOME says where.
 */
export function dataPaths(env: NodeJS.ProcessEnv = process.env): DataPaths {
  const raw = env.TROUPE_HOME?.trim();
  const config = env.TROUPE_CONFIG?.trim();
  const configFile = config ? resolve(expandHome(config)) : undefined;
  const dataDir = raw ? resolve(expandHome(raw)) : configFile ? dirname(configFile) : join(homedir(), ".troupe");
  return {
    dataDir,
    configFile: configFile ?? join(dataDir, "config.json"),
    storeDir: join(dataDir, "store"),
    logsDir: join(dataDir, "logs"),
    mediaDir: join(dataDir, "media"),
    tokenFile: join(dataDir, "gateway.token"),
    pidFile: join(dataDir, "daemon.pid"),
    defaultWorkspace: join(dataDir, "workspace"),
  };
}

/** Resolves a configured path: `~` expands, relative paths are taken against `base`. */
export function resolveUserPath(p: string, base: string): string {
  const expanded = expandHome(p);
  return isAbsolute(expanded) ? expanded : resolve(base, expanded);
}

/**
 * `--config PATH` and `--workspace DIR`, given to any command: they become TROUPE_CONFIG and the
 * workspace override in the environment, so the command, and a daemon or service it starts, use them.
 */
export function applyInstanceOptions(opts: { config?: string; workspace?: string }, env: NodeJS.ProcessEnv = process.env): void {
  if (opts.config) env.TROUPE_CONFIG = resolve(expandHome(opts.config));
  if (opts.workspace) env.TROUPE_AGENTS__DEFAULTS__WORKSPACE = resolve(expandHome(opts.workspace));
}
