import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

export const TROUPE_BIN = fileURLToPath(new URL("../../bin/troupe.js", import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real CLI as a user would, with its own TROUPE_HOME and no inherited TROUPE_ vars (optionally as another user). */
export function runCli(args: string[], env: Record<string, string>, input?: string, as?: { uid: number; gid: number }): Promise<CliResult> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("TROUPE_")));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [TROUPE_BIN, ...args], { env: { ...clean, ...env }, ...as });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    // A CLI that exits without reading all its input is not the test's failure.
    child.stdin.on("error", () => undefined);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? "");
  });
}
