import { closeSync, fstatSync, mkdirSync, openSync, renameSync, statSync, writeSync } from "node:fs";
import { dirname, resolve } from "node:path";

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

/** How often a writer looks at the file by name for what another process did to it (a rotation, its lines). */
export const CHECK_EVERY_MS = 1_000;

/**
 * What the writers of one file in this process share: the file's size (they all append to it) and
 * a count of rotations, so a writer follows a rotation another one made at its very next line.
 */
const shared = new Map<string, { size: number; rotations: number }>();

/**
 * A size-capped log file written synchronously (a line written is on disk even if the process is
 * killed next). The writers of one file in this process (the daemon's logger and an in-process
 * `troupe agent`'s) share its size and follow each other's rotations at once; a writer in another
 * process is seen by looking at the file by name at most every CHECK_EVERY_MS (a stat per line cost
 * more than the write): until then a line may go on into the file it rolled away, and the cap may
 * be passed by what it wrote meanwhile. Two processes rotating at the same instant may drop a
 * rolled file; the cap still holds.
 */
export function createRotatingFile(file: string, opts: RotationOptions, now: () => number = Date.now) {
  mkdirSync(dirname(file), { recursive: true });
  let state = shared.get(resolve(file));
  if (!state) shared.set(resolve(file), (state = { size: 0, rotations: 0 }));
  const common = state;
  let fd = openSync(file, "a", 0o600);
  let ino = fstatSync(fd).ino;
  common.size = fstatSync(fd).size;
  let rotations = common.rotations;
  let checkedAt = now();

  const reopen = () => {
    closeSync(fd);
    fd = openSync(file, "a", 0o600);
    const info = fstatSync(fd);
    ino = info.ino;
    common.size = info.size;
    rotations = common.rotations;
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
    common.rotations++;
    if (rolled.length) {
      renameSync(file, rolled[0]!);
      return reopen();
    }
    // Only one file kept: it starts over.
    closeSync(fd);
    fd = openSync(file, "w", 0o600);
    ino = fstatSync(fd).ino;
    common.size = 0;
    rotations = common.rotations;
  };
  /** The file by name: another process may have rolled it away, removed it, or written to it. */
  const look = () => {
    checkedAt = now();
    try {
      const named = statSync(file);
      if (named.ino !== ino) reopen();
      else common.size = named.size;
    } catch {
      // Removed or rolled away by another process: start the file again.
      reopen();
    }
  };

  /** Lines dropped because the disk refused them (full, read-only, failing). */
  let dropped = 0;
  const write = (chunk: string) => {
    const bytes = Buffer.byteLength(chunk);
    if (rotations !== common.rotations) reopen();
    else if (now() - checkedAt >= CHECK_EVERY_MS) look();
    if (common.size > 0 && common.size + bytes > opts.maxBytes) rotate();
    writeSync(fd, chunk);
    common.size += bytes;
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
