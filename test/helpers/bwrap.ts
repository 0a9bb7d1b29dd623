import { existsSync, readdirSync, readFileSync } from "node:fs";
import { symlink } from "node:fs/promises";
import { join } from "node:path";
import { findOnPath } from "../../src/tools/bwrap.js";

/** bwrap on this machine's PATH (.ci/run installs it). */
export const BWRAP = findOnPath("bwrap", process.env.PATH);

/**
 * The sandbox tests are skipped only when asked (TROUPE_TEST_SKIP_BWRAP=1); a machine without
 * bwrap otherwise fails them with a message that says what to install.
 */
export const SKIP_BWRAP = !BWRAP && process.env.TROUPE_TEST_SKIP_BWRAP === "1";

export function requireBwrap(): string {
  if (!BWRAP) {
    throw new Error(
      "bwrap (bubblewrap) is not on PATH: the exec sandbox tests need it (apt-get install bubblewrap; .ci/run installs it). " +
        "Set TROUPE_TEST_SKIP_BWRAP=1 to skip them on purpose.",
    );
  }
  return BWRAP;
}

/** Host pids of the processes whose command line contains `marker` (inside a sandbox or not). */
export function pidsWith(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(marker)) found.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/** Fills `bin` with a shell and a few tools, and no bwrap: a PATH on which auto finds no sandbox. */
export async function pathWithoutBwrap(bin: string): Promise<string> {
  for (const tool of ["bash", "sh", "cat", "ls", "dirname", "env"]) {
    const found = ["/usr/bin", "/bin"].map((d) => join(d, tool)).find((p) => existsSync(p));
    if (found) await symlink(found, join(bin, tool));
  }
  return bin;
}
