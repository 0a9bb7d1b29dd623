import type * as ChildProcess from "node:child_process";
import { accessSync, constants, existsSync, statSync } from "node:fs";
import { delimiter, isAbsolute, join, sep } from "node:path";
import { lazyRequire } from "../builtin.js";
import { ConfigError } from "../errors.js";
import { EGRESS_FORWARDER, EGRESS_SOCKET_INSIDE } from "./egress-proxy.js";
import { isInside, realpathLoose } from "./sandbox.js";

/** tools.exec.sandbox: "auto" uses bubblewrap when it is on PATH. */
export type ExecSandboxSetting = "auto" | "bwrap" | "none";

/** How exec runs its commands: in a bubblewrap sandbox, or as plain children of the daemon. */
export type ExecIsolation =
  | {
      kind: "bwrap";
      bin: string;
      /** Directories that must not be visible at all (the data dir, the user's home). */
      hide: string[];
      /** Directories shown read-only even when inside a hidden one (media, built-in skills). */
      readable: string[];
      /** The egress proxy's socket (started on first use): with it the command gets its own network namespace whose only way out is the proxy. */
      egress?: () => Promise<string>;
      /** The node binary that runs the forwarder to the proxy inside the sandbox. */
      node?: string;
    }
  | { kind: "none" };

/** Why exec is not isolated: the user said so, restrictToWorkspace is off, or auto found no bwrap. */
export type SandboxChoice = { kind: "bwrap"; bin: string } | { kind: "none"; why: "off" | "unrestricted" | "missing" };

export const INSTALL_HINT = 'install bubblewrap (apt-get install bubblewrap; dnf install bubblewrap; pacman -S bubblewrap)';

export function findOnPath(name: string, pathVar: string | undefined): string | undefined {
  for (const dir of (pathVar ?? "").split(delimiter)) {
    if (!dir || !isAbsolute(dir)) continue;
    const file = join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      if (statSync(file).isFile()) return file;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

/**
 * Picks exec's isolation from the config and PATH. Only a restricted workspace is sandboxed;
 * "bwrap" without bwrap installed is a config error that says how to fix it.
 */
export function chooseExecSandbox(
  tools: { restrictToWorkspace: boolean; exec: { sandbox: ExecSandboxSetting } },
  env: NodeJS.ProcessEnv,
  configFile: string,
): SandboxChoice {
  if (!tools.restrictToWorkspace) return { kind: "none", why: "unrestricted" };
  const setting = tools.exec.sandbox;
  if (setting === "none") return { kind: "none", why: "off" };
  const bin = findOnPath("bwrap", env.PATH);
  if (bin) return { kind: "bwrap", bin };
  if (setting === "bwrap") {
    throw new ConfigError(configFile, [
      `tools.exec.sandbox: "bwrap" but bwrap is not on PATH; ${INSTALL_HINT}, or set tools.exec.sandbox to "auto" or "none"`,
    ]);
  }
  return { kind: "none", why: "missing" };
}

/** What auto finding no bwrap means, and what to do about it (`troupe status` and `troupe doctor` say them too). */
export const UNISOLATED_WHY =
  "exec is not isolated: bubblewrap (bwrap) is not on PATH, so commands the agent runs can read and write whatever this user can, " +
  "troupe's data dir (config.json, gateway.token) included";
export const UNISOLATED_FIX = `to sandbox them, ${INSTALL_HINT}; to run unsandboxed on purpose and silence this, set tools.exec.sandbox to "none"`;

/** The start-up warning when auto found no bwrap. */
export const UNISOLATED_WARNING = `${UNISOLATED_WHY}. ${UNISOLATED_FIX.replace(/^t/, "T")}.`;

/** What a command that runs exec in-process (`troupe agent`) says at start-up: the warning, when exec is on and auto found no bwrap. */
export function unisolatedNotice(execEnabled: boolean, choice: SandboxChoice): string | undefined {
  return execEnabled && choice.kind === "none" && choice.why === "missing" ? UNISOLATED_WARNING : undefined;
}

type Mount = { path: string; order: number; args: (p: string) => string[] };

/**
 * bwrap's arguments for one command: the whole system read-only, /tmp private, the hidden
 * directories replaced by empty tmpfs, the workspace bound back read-write (it usually lives
 * inside the data dir), the readable roots bound back read-only. A mount covers whatever was
 * mounted on its ancestors, so mounts go shallowest first. A hidden directory inside the workspace
 * (the data dir when the workspace is the home) is hidden again after the workspace is bound;
 * one that is the workspace itself (the home as workspace) yields to it.
 */
export function bwrapArgs(isolation: Extract<ExecIsolation, { kind: "bwrap" }>, workspace: string, cwd: string, egressSocket?: string): string[] {
  const real = (p: string) => realpathLoose(p);
  const ws = real(workspace);
  const mounts: Mount[] = [{ path: "/tmp", order: 0, args: (p) => ["--tmpfs", p] }];
  // Only existing paths: a mount point bwrap had to create would be created on the real filesystem.
  for (const dir of isolation.hide.filter((d) => existsSync(d)).map(real)) {
    mounts.push({ path: dir, order: dir !== ws && isInside(dir, ws) ? 2 : 0, args: (p) => ["--tmpfs", p] });
  }
  mounts.push({ path: ws, order: 1, args: (p) => ["--bind", p, p] });
  for (const dir of isolation.readable.filter((d) => existsSync(d)).map(real)) {
    mounts.push({ path: dir, order: 3, args: (p) => ["--ro-bind", p, p] });
  }
  const depth = (p: string) => (p === sep ? 0 : p.split(sep).length);
  mounts.sort((a, b) => depth(a.path) - depth(b.path) || a.order - b.order);
  return [
    "--ro-bind", "/", "/",
    "--dev", "/dev",
    "--proc", "/proc",
    ...mounts.flatMap((m) => m.args(m.path)),
    // No network of its own: only loopback, and the egress proxy's socket in its private /tmp.
    ...(egressSocket ? ["--unshare-net", "--bind", egressSocket, EGRESS_SOCKET_INSIDE] : []),
    // Its own pid namespace: the daemon's /proc/<pid>/environ is out of sight, and when the
    // command exits everything it started goes with it.
    "--unshare-pid",
    "--unshare-ipc",
    "--die-with-parent",
    "--new-session",
    // Run as root, bwrap would keep every capability: enough to remount / read-write.
    "--cap-drop", "ALL",
    "--chdir", real(cwd),
    "--",
  ];
}

/**
 * Loaded when a sandbox is probed, not by every command that builds the tools: a one-shot turn then
 * loads it later, off its path to the model (its lent control API's listen loads it with node:cluster).
 */
const childProcess = lazyRequire<typeof ChildProcess>("node:child_process");

/** Whether bwrap can actually build a sandbox here (user namespaces may be disabled); the error if not. */
export function probeBwrap(bin: string): string | undefined {
  const r = childProcess().spawnSync(bin, ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--cap-drop", "ALL", "--", "/bin/sh", "-c", "true"], {
    encoding: "utf8",
    timeout: 10_000,
    env: { PATH: "/usr/bin:/bin" },
  });
  if (r.status === 0) return undefined;
  return (r.stderr || r.error?.message || `exit ${r.status ?? r.signal}`).trim();
}

/** What the gateway says at start-up about exec's isolation, if anything: once, not per command. */
export function sandboxNotice(choice: SandboxChoice, probe: (bin: string) => string | undefined = probeBwrap): string | undefined {
  if (choice.kind === "none") return choice.why === "missing" ? UNISOLATED_WARNING : undefined;
  const failure = probe(choice.bin);
  if (!failure) return undefined;
  return (
    `exec's sandbox cannot start here (${failure}): every exec call will fail until it can. ` +
    'bwrap needs unprivileged user namespaces (or to run as root); enable them, or set tools.exec.sandbox to "none" to run commands unsandboxed.'
  );
}

/** The command line inside the sandbox: through the egress forwarder when there is a proxy and the sandbox can see node. */
export function sandboxedCommand(isolation: Extract<ExecIsolation, { kind: "bwrap" }>, egressSocket: string | undefined, shell: string, command: string): string[] {
  const direct = [shell, "-c", command];
  // A node the sandbox cannot see (installed under the hidden home) runs no forwarder: no network at all.
  if (!egressSocket || !isolation.node || !nodeVisible(isolation)) return direct;
  return [isolation.node, "-e", EGRESS_FORWARDER, "--", EGRESS_SOCKET_INSIDE, ...direct];
}

/** Whether the node binary is visible inside the sandbox (not under a hidden directory). */
export function nodeVisible(isolation: Extract<ExecIsolation, { kind: "bwrap" }>): boolean {
  if (!isolation.node) return false;
  const node = realpathLoose(isolation.node);
  return !isolation.hide.some((d) => isInside(node, realpathLoose(d)));
}
