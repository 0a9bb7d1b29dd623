import type { Logger } from "pino";

/** What the handlers use of a process: `process` itself, or a stand-in in tests. */
export interface CrashTarget {
  on(event: "unhandledRejection", listener: (reason: unknown) => void): unknown;
  on(event: "uncaughtException", listener: (err: Error) => void): unknown;
  exit(code: number): void;
  stderr: { write(text: string): unknown };
}

export interface CrashHandlerOptions {
  logger: Logger;
  /** For the stderr line (log lines are redacted by the logger). */
  redact: (text: string) => string;
  /** Who is speaking on stderr, e.g. "troupe gateway". */
  name: string;
}

/**
 * Last-resort handlers for a long-running process (the gateway).
 *
 * A rejected promise nobody handled is one effect that failed on its own (a notice not queued, a
 * read that failed): the stack it ran on unwound normally, and what is durable was written in
 * atomic batches, so the process logs it and keeps serving everyone else.
 *
 * An uncaught exception threw through a synchronous stack: an actor may have stopped half-way
 * through a transition, a lock stayed held, a timer never re-armed. Carrying on would serve from a
 * state that may be wrong, so the process logs it, says so on stderr and exits 1. Nothing durable
 * is lost: the next start (the service unit restarts it) resumes every turn from its last
 * checkpoint, as after a kill -9.
 */
export function installCrashHandlers(opts: CrashHandlerOptions, target: CrashTarget = process): void {
  target.on("unhandledRejection", (reason) => {
    try {
      opts.logger.error({ err: reason }, "unhandled promise rejection; still running");
    } catch {
      target.stderr.write(`${opts.name}: unhandled promise rejection (could not log it): ${opts.redact(describe(reason))}\n`);
    }
  });
  target.on("uncaughtException", (err) => {
    try {
      opts.logger.fatal({ err }, "uncaught exception; exiting");
      // Lines wait for the end of the loop's turn (rotating-file.ts): out now, before the exit.
      opts.logger.flush();
    } finally {
      target.stderr.write(
        `${opts.name}: uncaught exception: ${opts.redact(describe(err))}; exiting, since its in-memory state may be inconsistent (the next start resumes from the last checkpoints)\n`,
      );
      target.exit(1);
    }
  });
}

const describe = (err: unknown) => (err instanceof Error ? `${err.name}: ${err.message}` : String(err));
