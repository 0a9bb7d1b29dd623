import type * as ChildProcess from "node:child_process";
import { accessSync, constants, existsSync, lstatSync, readlinkSync, statSync } from "node:fs";
import { basename, delimiter, dirname, isAbsolute, join, sep } from "node:path";
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
      /** What must not be visible (the data dir, the user's home: empty inside; a config file kept elsewhere: unreadable where a mount shows it). */
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

type Mount = { path: string; order: number; args: (p: string) => string[]; shows?: boolean };

/** Programs and libraries, read-only: /usr, and /bin, /lib… where they are real directories (symlinks into /usr on most systems are made again as symlinks). */
const SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/**
 * From /etc only what programs read to run: Debian's command switches (awk, editor), the dynamic
 * linker's cache, user and group names (whoami, ls -l), name resolution, TLS certificates and the
 * time zone. Not /etc as a whole: it holds shadow, ssh host keys, /etc/ssl/private.
 */
const ETC_ENTRIES = [
  "alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
  "passwd", "group", "nsswitch.conf",
  "hosts", "host.conf", "resolv.conf", "gai.conf", "services", "protocols",
  "ssl/certs", "ssl/openssl.cnf", "ca-certificates", "ca-certificates.conf", "pki/tls/certs", "pki/tls/cert.pem", "pki/ca-trust", "crypto-policies",
  "localtime", "timezone", "os-release", "mime.types",
].map((e) => `/etc/${e}`);

function lstatOrUndefined(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

/** The system mounts: what exists of SYSTEM_DIRS and ETC_ENTRIES on this machine. */
function systemMounts(): Mount[] {
  const mounts: Mount[] = [];
  for (const dir of SYSTEM_DIRS) {
    const st = lstatOrUndefined(dir);
    if (st?.isSymbolicLink()) mounts.push({ path: dir, order: -1, args: (p) => ["--symlink", readlinkSync(p), p] });
    else if (st?.isDirectory()) mounts.push({ path: dir, order: -1, args: (p) => ["--ro-bind", p, p], shows: true });
  }
  // Bound through their symlinks (resolv.conf often points into /run): a dangling one is left out.
  for (const entry of ETC_ENTRIES.filter((e) => existsSync(e))) mounts.push({ path: entry, order: -1, args: (p) => ["--ro-bind", p, p], shows: true });
  return mounts;
}

const depth = (p: string) => (p === sep ? 0 : p.split(sep).length);

/** Whether `path` is visible through the mounts: the deepest mount over it (the last of equals) shows. */
function shownBy(mounts: Mount[], path: string): boolean {
  const over = mounts.filter((m) => isInside(path, m.path)).sort((a, b) => depth(a.path) - depth(b.path) || a.order - b.order);
  return over.at(-1)?.shows === true;
}

/**
 * bwrap's arguments for one command. Nothing of the host is there unless listed: the system
 * mounts (read-only), the workspace (read-write), the readable roots (read-only) and the node binary
 * that runs the egress forwarder; /tmp is private and the root itself read-only. The hidden
 * directories are empty tmpfs (the home, so $HOME exists; the data dir when it is inside the
 * workspace); a hidden file (a config kept outside the data dir) that a mount shows is covered by
 * /dev/null, which bwrap's nodev binds make unreadable (Permission denied).
 * A mount covers whatever was mounted on its ancestors, so mounts go shallowest first. A hidden
 * directory inside the workspace (the data dir when the workspace is the home) is hidden again
 * after the workspace is bound; one that is the workspace itself (the home as workspace) yields to it.
 */
export function bwrapArgs(isolation: Extract<ExecIsolation, { kind: "bwrap" }>, workspace: string, cwd: string, egressSocket?: string): string[] {
  const real = (p: string) => realpathLoose(p);
  const ws = real(workspace);
  const mounts: Mount[] = [...systemMounts(), { path: "/tmp", order: 0, args: (p) => ["--tmpfs", p] }];
  // Only existing paths: a mount point bwrap had to create would be created on the real filesystem.
  const hidden = isolation.hide.filter((d) => existsSync(d)).map(real);
  const files = hidden.filter((f) => !statSync(f).isDirectory());
  for (const dir of hidden.filter((d) => !files.includes(d))) {
    mounts.push({ path: dir, order: dir !== ws && isInside(dir, ws) ? 2 : 0, args: (p) => ["--tmpfs", p] });
  }
  mounts.push({ path: ws, order: 1, args: (p) => ["--bind", p, p], shows: true });
  const readable = isolation.readable.filter((d) => existsSync(d));
  for (const dir of readable.map(real)) mounts.push({ path: dir, order: 3, args: (p) => ["--ro-bind", p, p], shows: true });
  // A readable root that is a symlink (a node_modules linked in from elsewhere) is made again where
  // no mount shows it, so what finds it by that name (node's module resolution) still does.
  for (const link of readable.filter((d) => lstatSync(d).isSymbolicLink())) {
    const at = join(real(dirname(link)), basename(link));
    if (!shownBy(mounts, at)) mounts.push({ path: at, order: 3, args: (p) => ["--symlink", readlinkSync(link), p] });
  }
  // The forwarder's node, where no mount shows it (installed under /opt, say): the binary alone.
  const node = isolation.node && nodeVisible(isolation) ? real(isolation.node) : undefined;
  if (node && !shownBy(mounts, node)) mounts.push({ path: node, order: 3, args: (p) => ["--ro-bind", p, p], shows: true });
  for (const file of files.filter((f) => shownBy(mounts, f))) mounts.push({ path: file, order: 4, args: (p) => ["--ro-bind", "/dev/null", p] });
  mounts.sort((a, b) => depth(a.path) - depth(b.path) || a.order - b.order);
  return [
    "--dev", "/dev",
    "--proc", "/proc",
    ...mounts.flatMap((m) => m.args(m.path)),
    // No network of its own: only loopback, and the egress proxy's socket in its private /tmp.
    ...(egressSocket ? ["--unshare-net", "--bind", egressSocket, EGRESS_SOCKET_INSIDE] : []),
    // The root bwrap built (the mount points above) read-only, the mounts on it as they are.
    "--remount-ro", "/",
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
  return [realpathLoose(isolation.node), "-e", EGRESS_FORWARDER, "--", EGRESS_SOCKET_INSIDE, ...direct];
}

/** Whether the node binary is visible inside the sandbox (not under a hidden directory). */
export function nodeVisible(isolation: Extract<ExecIsolation, { kind: "bwrap" }>): boolean {
  if (!isolation.node) return false;
  const node = realpathLoose(isolation.node);
  return !isolation.hide.some((d) => isInside(node, realpathLoose(d)));
}
