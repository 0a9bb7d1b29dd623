import { writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { machines } from "../../machines/index.js";
import { TroupeError } from "../errors.js";
import { graphMermaid, graphText, machineGraphs, type MachineGraph } from "../inspect/graph.js";
import type { DataPaths } from "../paths.js";
import { connectDaemon } from "./client.js";
import { printable } from "./printable.js";
import { backingOffLines, treeLines, type ActorsResponse } from "./daemon.js";

export const INSPECT_FORMATS = ["text", "mermaid", "json"] as const;
export type InspectFormat = (typeof INSPECT_FORMATS)[number];

/** The graphs of the machines asked for (all when none is named). */
export function selectGraphs(name?: string): MachineGraph[] {
  const all = machineGraphs(machines);
  if (!name) return all;
  const one = all.filter((g) => g.name === name);
  if (!one.length) throw new TroupeError(`no machine named ${JSON.stringify(name)}; the machines are: ${all.map((g) => g.name).join(", ")}`);
  return one;
}

/** `troupe inspect [machine]`: the machines as text, Mermaid or JSON, or a standalone HTML page with --out. */
export async function inspectCommand(opts: { machine?: string; format: string; out?: string }): Promise<number> {
  if (!(INSPECT_FORMATS as readonly string[]).includes(opts.format)) {
    throw new TroupeError(`--format must be one of ${INSPECT_FORMATS.join(", ")}, not ${JSON.stringify(opts.format)}`);
  }
  const graphs = selectGraphs(opts.machine);
  if (opts.out) {
    if (!opts.out.endsWith(".html")) throw new TroupeError(`--out writes an HTML page: give a file name ending in .html, not ${opts.out}`);
    const { graphsHtml } = await import("../inspect/html.js");
    const file = resolve(opts.out);
    await writeFile(file, await graphsHtml(graphs));
    console.log(`wrote ${file} (${graphs.length} machine${graphs.length === 1 ? "" : "s"}; open it in a browser, it needs no network)`);
    return 0;
  }
  const format = opts.format as InspectFormat;
  if (format === "json") console.log(JSON.stringify(opts.machine ? graphs[0] : graphs, null, 2));
  else console.log(graphs.map(format === "mermaid" ? graphMermaid : graphText).join("\n\n"));
  return 0;
}

/** The actor tree as `--live` shows it: one line per actor, failed and restarting children marked. */
export function liveLines(actors: ActorsResponse, url: string, now = Date.now()): string[] {
  const lines = [`troupe ${url}  ${new Date(now).toISOString().slice(11, 19)}  turns: ${actors.turns.running} running, ${actors.turns.waiting} waiting (max ${actors.turns.max})`, ""];
  if (actors.root) lines.push(...treeLines(actors.root, now));
  for (const f of actors.failed) lines.push(`${f.status.toUpperCase()}: ${f.id}${f.error ? ` (${f.error})` : ""}`);
  lines.push(...backingOffLines(actors, now));
  return lines;
}

/** `troupe inspect --live`: the running daemon's actor tree, redrawn every interval (a plain snapshot per refresh when not on a terminal). */
export async function inspectLive(paths: DataPaths, opts: { intervalMs: number }, signal?: AbortSignal): Promise<number> {
  const client = await connectDaemon(paths);
  if (!client) throw new TroupeError("no troupe daemon is running for this data dir; start one with: troupe daemon start (troupe inspect without --live needs none)");
  const tty = Boolean(process.stdout.isTTY);
  while (!signal?.aborted) {
    let lines: string[];
    try {
      lines = liveLines(await client.get<ActorsResponse>("/api/actors"), client.url).map(printable);
    } catch (err) {
      if (!tty) throw err;
      lines = [printable(`troupe ${client.url}: ${(err as Error).message}; retrying`)];
    }
    process.stdout.write(tty ? `\x1b[H\x1b[2J${lines.join("\n")}\n` : `${lines.join("\n")}\n\n`);
    await new Promise((r) => setTimeout(r, opts.intervalMs));
  }
  return 0;
}
