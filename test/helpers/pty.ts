import { spawn, type ChildProcess } from "node:child_process";
import { TROUPE_BIN } from "./cli.js";

/** `troupe agent` (or another command) on a real pseudo-terminal (util-linux `script`), typed at as a person would. */
export interface PtySession {
  proc: ChildProcess;
  /** Everything printed so far. */
  screen(): string;
  type(keys: string): void;
  /** Waits until `text` is on the screen after the last thing waited for; fails after `timeoutMs` showing the screen. */
  waitFor(text: string | RegExp, timeoutMs?: number): Promise<void>;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  /** Kills it (SIGKILL) and resolves once it has exited: a test's teardown. */
  close(): Promise<void>;
}

export function spawnPty(args: string, env: Record<string, string>): PtySession {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("TROUPE_")));
  const proc = spawn("script", ["-qfec", `stty cols 120 rows 40; ${process.execPath} ${TROUPE_BIN} ${args}`, "/dev/null"], { env: { ...clean, TERM: "xterm", ...env } });
  let screen = "";
  let from = 0;
  proc.stdout!.on("data", (d: Buffer) => (screen += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on("exit", resolve));
  return {
    proc,
    screen: () => screen,
    type: (keys) => void proc.stdin!.write(keys),
    exited,
    async close() {
      proc.kill("SIGKILL");
      await exited;
    },
    async waitFor(text, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const rest = screen.slice(from);
        const m = typeof text === "string" ? (rest.includes(text) ? { index: rest.indexOf(text), length: text.length } : undefined) : (() => {
          const r = text.exec(rest);
          return r ? { index: r.index, length: r[0].length } : undefined;
        })();
        if (m) {
          from += m.index + m.length;
          return;
        }
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${String(text)}; screen: ${JSON.stringify(screen)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
}
