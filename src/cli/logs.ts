import { open, stat } from "node:fs/promises";
import { join } from "node:path";
import { prettyFactory } from "pino-pretty";
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

async function readFrom(file: string, position: number): Promise<{ text: string; end: number }> {
  const handle = await open(file, "r").catch(() => undefined);
  if (!handle) return { text: "", end: position };
  try {
    const { size } = await handle.stat();
    const start = size < position ? 0 : position; // rotated or truncated: start over
    const buffer = Buffer.alloc(size - start);
    await handle.read(buffer, 0, buffer.length, start);
    return { text: buffer.toString("utf8"), end: size };
  } finally {
    await handle.close();
  }
}

/** `troupe daemon logs [-f] [-n N]`: the last lines of logs/troupe.log, pretty, optionally followed. */
export async function showLogs(paths: DataPaths, opts: { follow: boolean; lines: number }, signal?: AbortSignal): Promise<number> {
  const file = join(paths.logsDir, "troupe.log");
  const format = formatter(Boolean(process.stdout.isTTY));
  const info = await stat(file).catch(() => undefined);
  if (!info && !opts.follow) {
    console.log(`no logs yet (${file})`);
    return 0;
  }
  let { text, end } = await readFrom(file, 0);
  for (const line of text.split("\n").filter(Boolean).slice(-opts.lines)) process.stdout.write(format(line));
  if (!opts.follow) return 0;
  let partial = "";
  while (!signal?.aborted) {
    await new Promise((r) => setTimeout(r, 250));
    ({ text, end } = await readFrom(file, end));
    if (!text) continue;
    const lines = (partial + text).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines.filter(Boolean)) process.stdout.write(format(line));
  }
  return 0;
}
