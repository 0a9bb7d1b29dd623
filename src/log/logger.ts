import { mkdirSync } from "node:fs";
import { join } from "node:path";
import pino, { type Logger } from "pino";
import { createRequire } from "node:module";
import type PinoPretty from "pino-pretty";
import { createRedactor } from "./redact.js";
import { createRotatingFile, type RotationOptions } from "./rotating-file.js";

export type { Logger };

export interface LoggerOptions {
  logsDir: string;
  secrets?: Iterable<string>;
  level?: string;
  /** Also write pretty lines to the console (on a TTY, or `troupe gateway` in the foreground). */
  console?: boolean;
  /** Size cap of logs/troupe.log and how many files are kept (default LOG_ROTATION). */
  rotate?: RotationOptions;
}

/** troupe.log is rolled over at 10 MB into troupe.log.1 … troupe.log.4: at most 50 MB of logs. */
export const LOG_ROTATION: RotationOptions = { maxBytes: 10 * 1024 * 1024, maxFiles: 5 };

/** JSON lines to <logs>/troupe.log (size-capped, rolled over), pretty on the console when asked; secrets redacted in both. */
export function createLogger(opts: LoggerOptions): Logger {
  mkdirSync(opts.logsDir, { recursive: true });
  const redact = createRedactor(opts.secrets ?? []);
  const file = createRotatingFile(join(opts.logsDir, "troupe.log"), opts.rotate ?? LOG_ROTATION);
  // pino-pretty loads only when there is a console to print to.
  const pretty = opts.console
    ? (createRequire(import.meta.url)("pino-pretty") as typeof PinoPretty)({ colorize: Boolean(process.stdout.isTTY), destination: 2, sync: true })
    : undefined;
  // Every line to both (the logger's level decides what is a line): pino's multistream did the
  // same with a level check and bookkeeping per line, and had no flush (logger.flush() wrote nothing out).
  const destination = pretty
    ? {
        write(line: string) {
          file.write(line);
          pretty.write(line);
          return true;
        },
        flush: file.flush,
        flushSync: file.flushSync,
        end: file.end,
      }
    : file;
  return pino(
    {
      level: opts.level ?? process.env.TROUPE_LOG_LEVEL ?? "info",
      redact: { paths: ["apiKey", "token", "*.apiKey", "*.token", "headers.authorization"], censor: "[REDACTED]" },
      hooks: { streamWrite: redact },
    },
    destination,
  );
}

/** A logger that writes nothing, for tests and one-shot commands that must stay quiet. */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
