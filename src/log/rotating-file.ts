import { closeSync, fstatSync, mkdirSync, openSync, renameSync, statSync, writeSync } from "node:fs";
import { dirname } from "node:path";

export interface RotationOptions {
  /** A file is rolled over before a write would take it past this size. */
  maxBytes: number;
  /** How many files are kept: the live one and maxFiles - 1 rolled ones (`.1` newest … `.N` oldest). */
  maxFiles: number;
}

/** Errors of the disk, not of troupe: a log line that meets one is dropped. */
const DISK_ERRORS = new Set(["ENOSPC", "EDQUOT", "EROFS", "EIO"]);

/** The rolled-over files of `file`, newest first: file.1, file.2, … */
export const rotatedFiles = (file: string, maxFiles: number) => Array.from({ length: maxFiles - 1 }, (_, i) => `${file}.${i + 1}`);

/**
 * A size-capped log file written synchronously (a line written is on disk even if the process is
 * killed next). Before each write it looks at the file by name, so a second process writing the
 * same log (the daemon and an in-process `troupe agent`) follows a rotation the other one made
 * instead of writing on into the rolled file. Two processes rotating at the same instant may drop a
 * rolled file; the cap still holds.
 */
export function createRotatingFile(file: string, opts: RotationOptions) {
  mkdirSync(dirname(file), { recursive: true });
  let fd = openSync(file, "a", 0o600);
  let ino = fstatSync(fd).ino;

  const reopen = () => {
    closeSync(fd);
    fd = openSync(file, "a", 0o600);
    ino = fstatSync(fd).ino;
  };
  const rotate = () => {
    const rolled = rotatedFiles(file, opts.maxFiles);
    for (let i = rolled.length - 1; i > 0; i--) {
      try {
        renameSync(rolled[i - 1]!, rolled[i]!);
      } catch {
        // Not there yet.
      }
    }
    if (rolled.length) {
      renameSync(file, rolled[0]!);
      return reopen();
    }
    // Only one file kept: it starts over.
    closeSync(fd);
    fd = openSync(file, "w", 0o600);
    ino = fstatSync(fd).ino;
  };

  /** Lines dropped because the disk refused them (full, read-only, failing). */
  let dropped = 0;
  const write = (chunk: string) => {
    const bytes = Buffer.byteLength(chunk);
    let size: number;
    try {
      const now = statSync(file);
      if (now.ino !== ino) reopen();
      size = now.size;
    } catch {
      // Removed or rolled away by another process: start the file again.
      reopen();
      size = 0;
    }
    if (size > 0 && size + bytes > opts.maxBytes) rotate();
    writeSync(fd, chunk);
  };

  return {
    write(chunk: string): boolean {
      // A full or failing disk must not take the process down with it (the store reports the
      // failure and recovers): the line is dropped, and the count said once writing works again.
      try {
        if (dropped > 0) {
          write(`${JSON.stringify({ level: 40, time: Date.now(), pid: process.pid, dropped, msg: `${dropped} log line(s) dropped: the disk refused them` })}\n`);
          dropped = 0;
        }
        write(chunk);
      } catch (err) {
        if (!DISK_ERRORS.has((err as NodeJS.ErrnoException).code ?? "")) throw err;
        dropped++;
      }
      return true;
    },
    flushSync() {},
    end() {
      closeSync(fd);
    },
  };
}
