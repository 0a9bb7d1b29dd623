import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

export interface StdioParams {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
  /** Where the command is set ("tools.mcpServers.<name>"), for the error when it cannot be started. */
  setting: string;
  /** Each line the server writes to stderr (its logs). */
  onStderr?: (line: string) => void;
}

/** Why the command could not be started, with the setting to fix: not Node's "spawn <path> ENOENT". */
function spawnFailure(err: NodeJS.ErrnoException, { command, cwd, setting }: StdioParams): Error {
  // spawn says ENOENT for a missing cwd too, naming the command.
  if (err.code === "ENOENT" && cwd && !existsSync(cwd)) return new Error(`working directory not found: ${cwd} (check ${setting}.cwd)`, { cause: err });
  if (err.code === "ENOENT") return new Error(`command not found: ${command} (check ${setting}.command)`, { cause: err });
  if (err.code === "EACCES") return new Error(`command not executable: ${command} (permission denied; check ${setting}.command, or chmod +x it)`, { cause: err });
  return err;
}

/** How long a server gets between closing its stdin, SIGTERM and SIGKILL. */
const GRACE_MS = 1_500;

/**
 * The SDK's stdio framing (ReadBuffer, serializeMessage) over a server started in its own process
 * group: the SDK's StdioClientTransport kills only its direct child, so a server started through
 * npx or a shell script would leave its real process behind. Here the whole group goes.
 */
export class ProcessGroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private child?: ChildProcess;
  private readonly buffer = new ReadBuffer();
  private exited?: Promise<void>;
  /** How the process ended (set before onclose): a server that fails at start is named by it. */
  exitStatus?: { code: number | null; signal: NodeJS.Signals | null };

  constructor(private readonly params: StdioParams) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): Promise<void> {
    if (this.child) throw new Error("stdio transport already started");
    return new Promise((resolve, reject) => {
      const child = spawn(this.params.command, this.params.args, {
        env: this.params.env,
        cwd: this.params.cwd,
        stdio: ["pipe", "pipe", "pipe"],
        detached: true,
      });
      this.child = child;
      this.exited = new Promise((done) => child.once("close", () => done()));
      child.once("error", (err) => {
        // Before "spawn" an error means the command never started.
        const error = child.pid === undefined ? spawnFailure(err, this.params) : err;
        reject(error);
        this.onerror?.(error);
      });
      child.once("spawn", () => resolve());
      child.once("close", (code, signal) => {
        // (A command that could not be started has no pid: its spawn error says why.)
        if (child.pid !== undefined) this.exitStatus = { code, signal };
        // The leader is gone; whatever it started in its group goes too.
        signalGroup(child, "SIGTERM");
        this.child = undefined;
        this.buffer.clear();
        this.onclose?.();
      });
      child.stdin?.on("error", (err) => this.onerror?.(err));
      child.stdout?.on("data", (chunk: Buffer) => {
        this.buffer.append(chunk);
        for (;;) {
          let message: JSONRPCMessage | null;
          try {
            message = this.buffer.readMessage();
          } catch (err) {
            // A line that is not JSON-RPC (a server printing its logs to stdout): reported, skipped.
            this.onerror?.(err as Error);
            continue;
          }
          if (message === null) break;
          this.onmessage?.(message);
        }
      });
      let partial = "";
      child.stderr?.setEncoding("utf8").on("data", (text: string) => {
        const lines = (partial + text).split("\n");
        partial = lines.pop() ?? "";
        for (const line of lines) if (line.trim()) this.params.onStderr?.(line);
      });
      // A last line without a newline ("fatal: ..." from printf) is a line too.
      child.stderr?.once("end", () => partial.trim() && this.params.onStderr?.(partial));
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || !stdin.writable) return Promise.reject(new Error("the server process is not running"));
    return new Promise((resolve) => {
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once("drain", resolve);
    });
  }

  /** Closes stdin, then SIGTERM to the group, then SIGKILL; resolves when the process is gone. */
  async close(): Promise<void> {
    const child = this.child;
    if (!child) return;
    const exited = this.exited!;
    const wait = () => Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), GRACE_MS).unref())]);
    child.stdin?.end();
    if (await wait()) return;
    killGroup(child, "SIGTERM");
    if (await wait()) return;
    killGroup(child, "SIGKILL");
    await exited;
  }
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals) {
  if (!signalGroup(child, signal)) child.kill(signal);
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): boolean {
  if (!child.pid) return false;
  try {
    process.kill(-child.pid, signal);
    return true;
  } catch {
    return false;
  }
}
