import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";

/** Every file troupe owns lives under one data dir: ~/.troupe, or $TROUPE_HOME. */
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

export function dataPaths(env: NodeJS.ProcessEnv = process.env): DataPaths {
  const raw = env.TROUPE_HOME?.trim();
  const dataDir = raw ? resolve(expandHome(raw)) : join(homedir(), ".troupe");
  return {
    dataDir,
    configFile: join(dataDir, "config.json"),
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
