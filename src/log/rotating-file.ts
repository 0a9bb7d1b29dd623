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

/** Writers with lines waiting for the end of the event loop's turn: written out when the process exits. */
const waiting = new Set<{ flushSync(): void }>();
let exitHook = false;

/**
 * A size-capped log file written synchronously. The lines logged during one turn of the event
 * loop go out together in one write at its end (setImmediate), or at once on `flushSync`, `end`
 * and the process's exit (process.exit included, as the crash handler calls it): a line per write
 * cost a system call each, several per turn of a session. A kill -9 loses at most the lines of the
 * loop turn it interrupts. The writers of one file in this process (the daemon's logger and an in-process
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
  /** Lines (each ending in a newline) written together: the cap is kept line by line all the same. */
  const write = (chunk: string, lines: number) => {
    const bytes = Buffer.byteLength(chunk);
    if (rotations !== common.rotations) reopen();
    else if (now() - checkedAt >= CHECK_EVERY_MS) look();
    if (common.size + bytes > opts.maxBytes && lines > 1) {
      // Rare (a rotation is due): each line on its own, so a file ends where the line that passes the cap starts.
      for (const line of chunk.match(/[^\n]*\n|[^\n]+$/g) ?? []) write(line, 1);
      return;
    }
    if (common.size > 0 && common.size + bytes > opts.maxBytes) rotate();
    writeSync(fd, chunk);
    common.size += bytes;
  };

  /** Writes now; a full or failing disk drops the lines (counted, and said once writing works again). */
  const writeOut = (chunk: string, lines: number) => {
    // A full or failing disk must not take the process down with it (the store reports the
    // failure and recovers).
    try {
      if (dropped > 0) {
        write(`${JSON.stringify({ level: 40, time: Date.now(), pid: process.pid, dropped, msg: `${dropped} log line(s) dropped: the disk refused them` })}\n`, 1);
        dropped = 0;
      }
      write(chunk, lines);
    } catch (err) {
      // Written at the end of the loop's turn, an error here would be thrown at nobody but the
      // process: any other failure is reported on stderr, once, and the lines dropped as well.
      if (!DISK_ERRORS.has((err as NodeJS.ErrnoException).code ?? "") && !reported) {
        reported = true;
        process.stderr.write(`troupe: cannot write the log ${file}: ${(err as Error).message}\n`);
      }
      dropped += lines;
    }
  };
  let reported = false;

  let pending: string[] = [];
  let scheduled = false;
  let ended = false;
  const writer = {
    write(chunk: string): boolean {
      // After end (the logger closed), a line has no file to go to.
      if (ended) return true;
      pending.push(chunk);
      if (!scheduled) {
        scheduled = true;
        waiting.add(writer);
        setImmediate(writer.flushSync);
      }
      return true;
    },
    /** Writes the waiting lines now. */
    flushSync(): void {
      scheduled = false;
      waiting.delete(writer);
      if (pending.length === 0) return;
      const lines = pending;
      pending = [];
      writeOut(lines.length === 1 ? lines[0]! : lines.join(""), lines.length);
    },
    /** pino's logger.flush(). */
    flush(cb?: (err?: Error) => void): void {
      writer.flushSync();
      cb?.();
    },
    end(): void {
      if (ended) return;
      writer.flushSync();
      ended = true;
      closeSync(fd);
    },
  };
  if (!exitHook) {
    exitHook = true;
    process.on("exit", () => {
      for (const w of [...waiting]) w.flushSync();
    });
  }
  return writer;
}
