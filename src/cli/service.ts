import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmod, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { basename, dirname, join } from "node:path";
import type { DataPaths } from "../paths.js";
import { TROUPE_BIN } from "./daemon.js";

/**
 * One unit per data dir, so two data dirs run as two services: troupe.service for ~/.troupe,
 * else troupe-<dir name>-<hash of its path>.service.
 */
export function serviceName(paths: DataPaths, home = homedir()): string {
  if (paths.dataDir === join(home, ".troupe")) return "troupe.service";
  const slug = basename(paths.dataDir).replace(/[^A-Za-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 24) || "home";
  return `troupe-${slug}-${createHash("sha256").update(paths.dataDir).digest("hex").slice(0, 8)}.service`;
}
export const serviceFile = (name: string, home = homedir()) => join(home, ".config", "systemd", "user", name);
/** The unit's EnvironmentFile: the variables config.json reads with ${VAR} (systemd starts the unit without your shell's environment). */
export const serviceEnvFile = (paths: DataPaths) => join(paths.dataDir, "service.env");

/** A systemd user unit that runs the gateway in the foreground and restarts it whenever it stops. */
export function serviceUnit(paths: DataPaths, nodePath = process.execPath, bin = TROUPE_BIN): string {
  return [
    "[Unit]",
    `Description=troupe personal AI agent runtime (gateway, data in ${paths.dataDir})`,
    "After=network-online.target",
    "Wants=network-online.target",
    "",
    "[Service]",
    "Type=simple",
    `Environment=TROUPE_HOME=${paths.dataDir}`,
    ...(paths.configFile === join(paths.dataDir, "config.json") ? [] : [`Environment=TROUPE_CONFIG=${paths.configFile}`]),
    // /restart then only exits (code 75) and systemd starts it again, in the unit's own cgroup.
    "Environment=TROUPE_SUPERVISED=systemd",
    `EnvironmentFile=${serviceEnvFile(paths)}`,
    `ExecStart=${nodePath} ${bin} gateway --detached`,
    "Restart=always",
    "RestartSec=3",
    "KillSignal=SIGTERM",
    "TimeoutStopSec=20",
    "",
    "[Install]",
    "WantedBy=default.target",
    "",
  ].join("\n");
}

/**
 * The variables the service needs: every ${VAR} in config.json (read as text, so an unset one
 * does not stop this) and the TROUPE_ settings of this shell (config overrides, the log level).
 */
export async function serviceVariables(paths: DataPaths, env: NodeJS.ProcessEnv = process.env): Promise<string[]> {
  const text = await readFile(paths.configFile, "utf8").catch(() => "");
  const interpolated = [...text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]!);
  const troupe = Object.keys(env).filter((k) => ((k.startsWith("TROUPE_") || k.startsWith("NANOBOT_")) && k.includes("__")) || k === "TROUPE_LOG_LEVEL");
  return [...new Set([...interpolated, ...troupe.sort()])];
}

/** systemd's EnvironmentFile quoting: double quotes, with backslash escapes. */
const quoted = (value: string) => `"${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`;

/** NAME=value lines of an existing environment file (so values added by hand survive a reinstall). */
async function existingValues(file: string): Promise<Map<string, string>> {
  const text = await readFile(file, "utf8").catch(() => "");
  const values = new Map<string, string>();
  for (const m of text.matchAll(/^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/gm)) values.set(m[1]!, m[2]!);
  return values;
}

/** The environment file's text: this shell's value of each variable, else the file's earlier one, else a line to fill in. */
export async function serviceEnvironment(paths: DataPaths, env: NodeJS.ProcessEnv = process.env): Promise<{ text: string; set: string[]; unset: string[] }> {
  const names = await serviceVariables(paths, env);
  const before = await existingValues(serviceEnvFile(paths));
  const set: string[] = [];
  const unset: string[] = [];
  const lines = [`# The environment of ${serviceName(paths)} (troupe daemon install-service): the variables config.json`, "# reads with ${VAR}. Keep this file private (mode 600); after a change: systemctl --user restart " + serviceName(paths)];
  for (const name of names) {
    const value = env[name];
    if (value !== undefined) lines.push(`${name}=${quoted(value)}`);
    else if (before.has(name)) lines.push(`${name}=${before.get(name)}`);
    else {
      lines.push(`# ${name}=   (not set when this file was written: give its value here)`);
      unset.push(name);
      continue;
    }
    set.push(name);
  }
  return { text: `${lines.join("\n")}\n`, set, unset };
}

function systemctl(...args: string[]): { ok: boolean; output: string } {
  const r = spawnSync("systemctl", ["--user", ...args], { encoding: "utf8" });
  return { ok: r.status === 0, output: `${r.stdout ?? ""}${r.stderr ?? ""}${r.error ? r.error.message : ""}`.trim() };
}

/** `troupe daemon install-service [--dry-run]`: the unit and its environment file, then systemctl enable --now. */
export async function installService(paths: DataPaths, opts: { dryRun: boolean }): Promise<number> {
  const name = serviceName(paths);
  const unit = serviceUnit(paths);
  const file = serviceFile(name);
  const envFile = serviceEnvFile(paths);
  const environment = await serviceEnvironment(paths);
  const listed = [...environment.set.map((n) => `${n}: set`), ...environment.unset.map((n) => `${n}: not set`)].join(", ") || "no variables";
  if (opts.dryRun) {
    console.log(`# would write ${file}\n${unit}`);
    console.log(`# would write ${envFile} (mode 600): ${listed}`);
    console.log(`# then run: systemctl --user daemon-reload && systemctl --user enable --now ${name}`);
    return 0;
  }
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, unit);
  console.log(`wrote ${file}`);
  await mkdir(dirname(envFile), { recursive: true });
  await writeFile(envFile, environment.text, { mode: 0o600 });
  await chmod(envFile, 0o600); // an existing file keeps its mode through writeFile
  console.log(`wrote ${envFile} (mode 600): ${listed}`);
  for (const n of environment.unset) console.log(`${n} is not set: add it to ${envFile}, then: systemctl --user restart ${name}`);
  const reload = systemctl("daemon-reload");
  const enable = reload.ok ? systemctl("enable", "--now", name) : reload;
  if (!enable.ok) {
    console.log(`systemctl could not enable it (${enable.output || "no systemd user session"}); run: systemctl --user daemon-reload && systemctl --user enable --now ${name}`);
    return 1;
  }
  console.log(`enabled and started ${name}; it restarts troupe whenever it stops (Restart=always)`);
  return 0;
}

/** `troupe daemon uninstall-service [--dry-run]`: the unit goes; the environment file stays (it may hold values typed by hand). */
export async function uninstallService(paths: DataPaths, opts: { dryRun: boolean }): Promise<number> {
  const name = serviceName(paths);
  const file = serviceFile(name);
  if (opts.dryRun) {
    console.log(`# would run: systemctl --user disable --now ${name}\n# would remove ${file}`);
    return 0;
  }
  const disable = systemctl("disable", "--now", name);
  if (!disable.ok) console.log(`systemctl: ${disable.output || "could not disable the unit"}`);
  await rm(file, { force: true });
  systemctl("daemon-reload");
  console.log(`removed ${file}; ${serviceEnvFile(paths)} is kept (delete it if you no longer need it)`);
  return 0;
}
