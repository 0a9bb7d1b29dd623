import { open, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { prettyFactory } from "pino-pretty";
import { LOG_ROTATION } from "../log/logger.js";
import { rotatedFiles } from "../log/rotating-file.js";
import type { DataPaths } from "../paths.js";
import { printable, printableDeep } from "./printable.js";

/** Formats JSON log lines one to a line, the session first ("[api:x] turn finished {state…}"); other lines pass through. */
function formatter(colorize: boolean): (line: string) => string {
  const pretty = prettyFactory({
    colorize,
    translateTime: "SYS:yyyy-mm-dd HH:MM:ss",
    ignore: "pid,hostname,sessionKey",
    singleLine: true,
    messageFormat: "{if sessionKey}[{sessionKey}] {end}{msg}",
  });
  return (line) => {
    // Log entries quote remote text (errors, hints): escaped before pino-pretty adds its colours.
    if (!line.startsWith("{")) return `${printable(line)}\n`;
    try {
      return pretty(printableDeep(JSON.parse(line)));
    } catch {
      return `${printable(line)}\n`;
    }
  };
}

/** With a session, only lines about it are kept (a line that is not JSON, or names no session, is left out). */
function lineFilter(session: string | undefined): (line: string) => boolean {
  if (session === undefined) return () => true;
  return (line) => {
    if (!line.startsWith("{")) return false;
    try {
      return mentions(JSON.parse(line) as Record<string, unknown>, session);
    } catch {
      return false;
    }
  };
}

/** Whether a log entry is about a session: its own, or one of those it names. */
const mentions = (entry: Record<string, unknown>, session: string) =>
  entry.sessionKey === session || (Array.isArray(entry.sessionKeys) && entry.sessionKeys.includes(session));

/** What the file at `file` holds from `position` on; a different file there (rotated) or a shorter one (truncated) is read from its start. */
async function readFrom(file: string, position: number, ino: number | undefined): Promise<{ text: string; end: number; ino: number | undefined }> {
  const handle = await open(file, "r").catch(() => undefined);
  if (!handle) return { text: "", end: position, ino };
  try {
    const info = await handle.stat();
    const start = info.ino !== ino || info.size < position ? 0 : position;
    const buffer = Buffer.alloc(info.size - start);
    await handle.read(buffer, 0, buffer.length, start);
    return { text: buffer.toString("utf8"), end: info.size, ino: info.ino };
  } finally {
    await handle.close();
  }
}

const linesOf = (text: string) => text.split("\n").filter(Boolean);

/** `troupe daemon logs [-f] [-n N] [--session KEY]`: the last lines of logs/troupe.log (reading on into the rolled-over files), pretty, optionally followed. */
export async function showLogs(paths: DataPaths, opts: { follow: boolean; lines: number; session?: string }, signal?: AbortSignal): Promise<number> {
  const file = join(paths.logsDir, "troupe.log");
  const format = formatter(Boolean(process.stdout.isTTY));
  const keep = lineFilter(opts.session);
  const info = await stat(file).catch(() => undefined);
  if (!info && !opts.follow) {
    console.log(`no logs yet (${file})`);
    return 0;
  }
  let { text, end, ino } = await readFrom(file, 0, undefined);
  let last = linesOf(text).filter(keep);
  // Fewer lines than asked for: the older ones are in troupe.log.1, .2, …
  for (const older of rotatedFiles(file, LOG_ROTATION.maxFiles)) {
    if (last.length >= opts.lines) break;
    const before = await readFile(older, "utf8").catch(() => undefined);
    if (before === undefined) break;
    last = [...linesOf(before).filter(keep), ...last];
  }
  for (const line of opts.lines === 0 ? [] : last.slice(-opts.lines)) process.stdout.write(format(line));
  if (!opts.follow) return 0;
  let partial = "";
  while (!signal?.aborted) {
    await new Promise((r) => setTimeout(r, 250));
    const was = { ino, end };
    ({ text, end, ino } = await readFrom(file, end, ino));
    if (was.ino !== undefined && ino !== was.ino) {
      // Rotated: first what was written to the old file (now troupe.log.1) since the last read.
      const rest = await readFrom(rotatedFiles(file, 2)[0]!, was.end, was.ino);
      text = (rest.ino === was.ino ? rest.text : "") + text;
    }
    if (!text) continue;
    const lines = (partial + text).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines.filter(Boolean).filter(keep)) process.stdout.write(format(line));
  }
  return 0;
}
