import type * as ChildProcess from "node:child_process";
import { existsSync } from "node:fs";
import { delimiter } from "node:path";
import { z } from "zod";
import { lazySchema } from "../../lazy-schema.js";
import { lazyRequire } from "../../builtin.js";
import { bwrapArgs, sandboxedCommand, type ExecIsolation } from "../bwrap.js";
import { defineTool, ToolError } from "../contract.js";
import { resolveToolPath, type Sandbox } from "../sandbox.js";
import type { SsrfGuard } from "../ssrf.js";
import { internalUrlRefusal, refusalOf, type ExecPolicy } from "./exec-guard.js";

/** Loaded when the first command runs: building the tools at start-up does not need it. */
const childProcess = lazyRequire<typeof ChildProcess>("node:child_process");

export const MAX_EXEC_OUTPUT_CHARS = 10_000;
export const MAX_EXEC_TIMEOUT_S = 600;
const KILL_GRACE_MS = 2_000;
const PIPE_GRACE_MS = 500;

export interface ExecOptions {
  sandbox: Sandbox;
  policy: ExecPolicy;
  /** tools.exec.timeout, seconds: 0 is no limit, and it is not capped at MAX_EXEC_TIMEOUT_S. */
  defaultTimeout: number;
  pathAppend: string;
  allowedEnvKeys: string[];
  env?: NodeJS.ProcessEnv;
  /** The real boundary when the workspace is restricted; the policy's patterns are a second line. */
  isolation: ExecIsolation;
  /** web_fetch's SSRF guard: a command naming an internal address is refused before it runs. */
  urlGuard?: SsrfGuard;
}

/** The child's environment: only what a shell needs, never the daemon's keys and tokens. */
export function scrubbedEnv(source: NodeJS.ProcessEnv, allowedKeys: string[], pathAppend: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const key of ["HOME", "LANG", "TERM", "PATH", ...allowedKeys]) {
    if (source[key] !== undefined) env[key] = source[key];
  }
  env.PATH ??= "/usr/local/bin:/usr/bin:/bin";
  if (pathAppend) env.PATH = `${env.PATH}${delimiter}${pathAppend}`;
  return env;
}

/** Keeps the head and the tail of long output, and says how much was cut. */
export function capOutput(text: string, max = MAX_EXEC_OUTPUT_CHARS): string {
  if (text.length <= max) return text;
  const half = Math.floor(max / 2);
  return `${text.slice(0, half)}\n\n... (${text.length - max} chars cut; redirect to a file and read it in parts for all of it) ...\n\n${text.slice(-half)}`;
}

/** Collects a stream's text, keeping at most `max` chars from each end. */
function collector(max: number) {
  let head = "";
  let tail = "";
  let total = 0;
  return {
    push(chunk: string) {
      total += chunk.length;
      if (head.length < max) {
        const room = max - head.length;
        head += chunk.slice(0, room);
        chunk = chunk.slice(room);
      }
      if (chunk) tail = (tail + chunk).slice(-max);
    },
    text: () => (total > head.length + tail.length ? `${head}\n... (${total - head.length - tail.length} chars) ...\n${tail}` : head + tail),
  };
}

const SHELL = existsSync("/bin/bash") ? "/bin/bash" : "/bin/sh";

function killGroup(pid: number | undefined, signal: NodeJS.Signals) {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

/**
 * The seconds a command may run, undefined for no limit (nanobot's _resolve_timeout): the model's own
 * timeout is capped at MAX_EXEC_TIMEOUT_S; the config's is not, and its 0 sets no limit.
 */
export function execTimeoutOf(perCall: number | undefined, configured: number): number | undefined {
  if (perCall) return Math.min(perCall, MAX_EXEC_TIMEOUT_S);
  return configured > 0 ? configured : undefined;
}

export function execTool(opts: ExecOptions) {
  const byDefault = opts.defaultTimeout > 0 ? `default ${opts.defaultTimeout}` : "no time limit unless given";
  return defineTool({
    name: "exec",
    description:
      `Run a shell command (${SHELL} -c) in the workspace and return its output and exit code. ` +
      `timeout in seconds (${byDefault}, max ${MAX_EXEC_TIMEOUT_S}); on timeout the whole process group is killed. ` +
      "Dangerous commands are refused. Output over 10,000 chars is cut in the middle." +
      (opts.isolation.kind === "bwrap"
        ? " Commands run in a sandbox: only the workspace is writable; of the rest of the system only /usr (with /bin, /lib) and the parts of /etc programs need are there, read-only; /tmp and the home directory are empty and private to the command."
        : ""),
    parameters: lazySchema(() => z.object({
      command: z.string().min(1),
      working_dir: z.string().optional().describe("Directory to run in (default: the workspace)"),
      // The model is told the maximum; a larger timeout is capped to it (execTimeoutOf), not refused, as nanobot does.
      timeout: z.number().int().min(1).meta({ maximum: MAX_EXEC_TIMEOUT_S }).optional(),
    })),
    exclusive: true,
    async execute({ command, working_dir, timeout }, ctx) {
      const cwd = working_dir ? resolveToolPath(opts.sandbox, working_dir, "write") : opts.sandbox.workspace;
      if (!existsSync(cwd)) throw new ToolError(`working_dir ${working_dir} does not exist`);
      const refusal = refusalOf(command, cwd, opts.policy) ?? (opts.urlGuard ? await internalUrlRefusal(command, opts.urlGuard) : undefined);
      if (refusal) throw new ToolError(refusal);
      const seconds = execTimeoutOf(timeout, opts.defaultTimeout);
      const env = scrubbedEnv(opts.env ?? process.env, opts.allowedEnvKeys, opts.pathAppend);

      // detached: a process group of its own, so a kill reaches everything it started. Sandboxed, bwrap
      // leads that group, and what runs inside dies with it (--die-with-parent, its own pid namespace).
      // bwrap itself gets the scrubbed environment: it is pid 1 inside, where /proc/1/environ is readable.
      // Sandboxed, the network is the egress proxy's (internal addresses refused as for web_fetch).
      const iso = opts.isolation;
      const egress = iso.kind === "bwrap" && iso.egress ? await iso.egress() : undefined;
      const [file, args] =
        iso.kind === "bwrap"
          ? [iso.bin, [...bwrapArgs(iso, opts.sandbox.workspace, cwd, egress), ...sandboxedCommand(iso, egress, SHELL, command)]]
          : [SHELL, ["-c", command]];
      const child = childProcess().spawn(file, args, { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
      const stdout = collector(MAX_EXEC_OUTPUT_CHARS);
      const stderr = collector(MAX_EXEC_OUTPUT_CHARS);
      child.stdout.setEncoding("utf8").on("data", (c: string) => stdout.push(c));
      child.stderr.setEncoding("utf8").on("data", (c: string) => stderr.push(c));

      let ended: "timeout" | "aborted" | undefined;
      const stop = (why: "timeout" | "aborted") => {
        ended ??= why;
        killGroup(child.pid, "SIGTERM");
        setTimeout(() => killGroup(child.pid, "SIGKILL"), KILL_GRACE_MS).unref();
      };
      const timer = seconds === undefined ? undefined : setTimeout(() => stop("timeout"), seconds * 1000);
      const onAbort = () => stop("aborted");
      ctx.signal.addEventListener("abort", onAbort, { once: true });

      const code = await new Promise<number | null>((resolve, reject) => {
        child.once("error", reject);
        // A background job that keeps the pipes open must not hold the call until the timeout.
        child.once("exit", () => {
          setTimeout(() => {
            child.stdout.destroy();
            child.stderr.destroy();
          }, PIPE_GRACE_MS).unref();
        });
        // "close" waits for the pipes too: output from grandchildren is not lost.
        child.once("close", (exitCode, signal) => resolve(exitCode ?? (signal ? 128 : null)));
      }).finally(() => {
        clearTimeout(timer);
        ctx.signal.removeEventListener("abort", onAbort);
      });
      if (ended) killGroup(child.pid, "SIGKILL");

      const parts = [stdout.text().trimEnd()];
      const err = stderr.text().trimEnd();
      if (err) parts.push(`STDERR:\n${err}`);
      const output = capOutput(parts.filter(Boolean).join("\n"));
      if (ended === "timeout") {
        throw new ToolError(`command timed out after ${seconds}s; its process group was killed.${output ? `\nOutput so far:\n${output}` : ""}`);
      }
      if (ended === "aborted") throw new ToolError("command cancelled; its process group was killed.");
      return `${output || "(no output)"}\n\nExit code: ${code ?? "unknown"}`;
    },
  });
}
