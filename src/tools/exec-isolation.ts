import { spawnSync } from "node:child_process";
import { ConfigError } from "../errors.js";
import { chooseExecSandbox, probeBwrap, UNISOLATED_FIX, UNISOLATED_WHY, type ExecSandboxSetting, type SandboxChoice } from "./bwrap.js";

type ExecTools = { restrictToWorkspace: boolean; exec: { enable: boolean; sandbox: ExecSandboxSetting } };

/**
 * How exec runs its commands, for `troupe status` and `troupe doctor`: "ok" (sandboxed, off, or
 * sandbox "none" on purpose), "warn" (auto found no bwrap, or restrictToWorkspace is off so commands
 * run anywhere: supported, said with the fix) or "fail" (exec cannot run as configured).
 */
export interface ExecIsolationReport {
  level: "ok" | "warn" | "fail";
  text: string;
  fix?: string;
}

/** The version bwrap reports ("bubblewrap 0.8.0" → "0.8.0"), if it answers. */
export function bwrapVersion(bin: string): string | undefined {
  const r = spawnSync(bin, ["--version"], { encoding: "utf8", timeout: 5_000, env: { PATH: "/usr/bin:/bin" } });
  return r.status === 0 ? /\d+(\.\d+)+/.exec(r.stdout)?.[0] : undefined;
}

/**
 * exec's isolation, said without starting anything but bwrap itself (a probe that it can build a
 * sandbox here, and its version). nanobot's workspace_sandbox_status reports the same three levels
 * (off, system-enforced, application guards only) for display.
 */
export function describeExecIsolation(
  tools: ExecTools,
  env: NodeJS.ProcessEnv,
  configFile: string,
  probe: (bin: string) => string | undefined = probeBwrap,
): ExecIsolationReport {
  if (!tools.exec.enable) return { level: "ok", text: "disabled (tools.exec.enable is false)" };
  let choice: SandboxChoice;
  try {
    choice = chooseExecSandbox(tools, env, configFile);
  } catch (err) {
    if (err instanceof ConfigError) return { level: "fail", text: err.problems.join("; ") };
    throw err;
  }
  if (choice.kind === "bwrap") {
    const failure = probe(choice.bin);
    if (failure) {
      return {
        level: "fail",
        text: `bwrap (${choice.bin}) cannot start a sandbox here (${failure}), so every exec call fails`,
        fix: 'enable unprivileged user namespaces (or run as root), or set tools.exec.sandbox to "none" to run commands unsandboxed',
      };
    }
    const version = bwrapVersion(choice.bin);
    return { level: "ok", text: `sandboxed by bwrap${version ? ` ${version}` : ""} (${choice.bin})` };
  }
  if (choice.why === "unrestricted") {
    return {
      level: "warn",
      text: "not isolated: tools.restrictToWorkspace is false, so commands run as this user, anywhere",
      fix: "set tools.restrictToWorkspace to true to keep the agent's tools in its workspace (exec then runs in bubblewrap when bwrap is on PATH)",
    };
  }
  if (choice.why === "off") return { level: "ok", text: 'not isolated: tools.exec.sandbox is "none" (on purpose)' };
  return { level: "warn", text: UNISOLATED_WHY.replace(/^exec is /, ""), fix: UNISOLATED_FIX };
}
