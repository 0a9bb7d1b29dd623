import { TroupeError } from "../errors.js";

/**
 * Why an MCP server could not be started or reached, in words: "MCP error -32000: Connection
 * closed" says nothing, the server's exit status and its last stderr lines do. nanobot lets a
 * stdio server's stderr through to the terminal; troupe runs in the background, so it keeps the
 * last lines and names them in the error (redacted as the logs are).
 */

/** How many stderr lines an error quotes, and how much of each. */
const TAIL_LINES = 3;
const LINE_CHARS = 200;

/** Lines that say where, not what: a stack frame, Node's version footer. */
const NOISE = [/^at\s/, /^Node\.js v\d/];

/** A stdio server's last few meaningful stderr lines. */
export function createStderrTail(max = TAIL_LINES) {
  const kept: string[] = [];
  return {
    push(line: string) {
      const text = line.trim();
      if (!text || NOISE.some((re) => re.test(text))) return;
      kept.push(text.length > LINE_CHARS ? `${text.slice(0, LINE_CHARS)}…` : text);
      if (kept.length > max) kept.shift();
    },
    lines: (): readonly string[] => kept,
  };
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** "exited with code 1: fatal: BASE_DIR missing", or "was killed by SIGKILL". */
export function describeExit(exit: ExitStatus, stderr: readonly string[]): string {
  const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
  return stderr.length ? `${how}: ${stderr.join(" | ")}` : how;
}

/** A server's connection failed or ended; the message says why (see describeExit). */
export class McpConnectionError extends TroupeError {}
