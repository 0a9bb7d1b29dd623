import { open, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { prettyFactory } from "pino-pretty";
import { LOG_ROTATION } from "../log/logger.js";
import { rotatedFiles } from "../log/rotating-file.js";
import type { DataPaths } from "../paths.js";

/** Formats JSON log lines the way the console shows them; other lines pass through. */
function formatter(colorize: boolean): (line: string) => string {
  const pretty = prettyFactory({ colorize, translateTime: "SYS:yyyy-mm-dd HH:MM:ss", ignore: "pid,hostname" });
  return (line) => {
    if (!line.startsWith("{")) return `${line}\n`;
    try {
      return pretty(JSON.parse(line));
    } catch {
      return `${line}\n`;
    }
  };
}

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

/** `troupe daemon logs [-f] [-n N]`: the last lines of logs/troupe.log (reading on into the rolled-over files), pretty, optionally followed. */
export async function showLogs(paths: DataPaths, opts: { follow: boolean; lines: number }, signal?: AbortSignal): Promise<number> {
  const file = join(paths.logsDir, "troupe.log");
  const format = formatter(Boolean(process.stdout.isTTY));
  const info = await stat(file).catch(() => undefined);
  if (!info && !opts.follow) {
    console.log(`no logs yet (${file})`);
    return 0;
  }
  let { text, end, ino } = await readFrom(file, 0, undefined);
  let last = linesOf(text);
  // Fewer lines than asked for: the older ones are in troupe.log.1, .2, …
  for (const older of rotatedFiles(file, LOG_ROTATION.maxFiles)) {
    if (last.length >= opts.lines) break;
    const before = await readFile(older, "utf8").catch(() => undefined);
    if (before === undefined) break;
    last = [...linesOf(before), ...last];
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
    for (const line of lines.filter(Boolean)) process.stdout.write(format(line));
  }
  return 0;
}
