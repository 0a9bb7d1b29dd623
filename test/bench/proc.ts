import { readFile } from "node:fs/promises";

/** A process's resident set size in bytes, from /proc/<pid>/status (Linux). */
export async function rssOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]);
  return kb * 1024;
}
