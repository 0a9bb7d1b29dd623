import { spawnSync } from "node:child_process";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import type { DataPaths } from "../paths.js";
import { TROUPE_BIN } from "./daemon.js";

export const SERVICE_NAME = "troupe.service";
export const serviceFile = (home = homedir()) => join(home, ".config", "systemd", "user", SERVICE_NAME);

/** A systemd user unit that runs the gateway in the foreground and restarts it whenever it stops. */
export function serviceUnit(paths: DataPaths, nodePath = process.execPath, bin = TROUPE_BIN): string {
  return [
    "[Unit]",
    "Description=troupe personal AI agent runtime (gateway)",
    "After=network-online.target",
    "Wants=network-online.target",
    "",
    "[Service]",
    "Type=simple",
    `Environment=TROUPE_HOME=${paths.dataDir}`,
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

function systemctl(...args: string[]): { ok: boolean; output: string } {
  const r = spawnSync("systemctl", ["--user", ...args], { encoding: "utf8" });
  return { ok: r.status === 0, output: `${r.stdout ?? ""}${r.stderr ?? ""}${r.error ? r.error.message : ""}`.trim() };
}

/** `troupe daemon install-service [--dry-run]`. */
export async function installService(paths: DataPaths, opts: { dryRun: boolean }): Promise<number> {
  const unit = serviceUnit(paths);
  const file = serviceFile();
  if (opts.dryRun) {
    console.log(`# would write ${file}\n${unit}`);
    console.log(`# then run: systemctl --user daemon-reload && systemctl --user enable --now ${SERVICE_NAME}`);
    return 0;
  }
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, unit);
  console.log(`wrote ${file}`);
  const reload = systemctl("daemon-reload");
  const enable = reload.ok ? systemctl("enable", "--now", SERVICE_NAME) : reload;
  if (!enable.ok) {
    console.log(`systemctl could not enable it (${enable.output || "no systemd user session"}); run: systemctl --user daemon-reload && systemctl --user enable --now ${SERVICE_NAME}`);
    return 1;
  }
  console.log(`enabled and started ${SERVICE_NAME}; it restarts troupe whenever it stops (Restart=always)`);
  return 0;
}

/** `troupe daemon uninstall-service [--dry-run]`. */
export async function uninstallService(opts: { dryRun: boolean }): Promise<number> {
  const file = serviceFile();
  if (opts.dryRun) {
    console.log(`# would run: systemctl --user disable --now ${SERVICE_NAME}\n# would remove ${file}`);
    return 0;
  }
  const disable = systemctl("disable", "--now", SERVICE_NAME);
  if (!disable.ok) console.log(`systemctl: ${disable.output || "could not disable the unit"}`);
  await rm(file, { force: true });
  systemctl("daemon-reload");
  console.log(`removed ${file}`);
  return 0;
}
