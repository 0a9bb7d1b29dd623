import { EventEmitter } from "node:events";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { installCrashHandlers } from "../../src/log/crash.js";
import { createLogger } from "../../src/log/logger.js";
import { createRedactor } from "../../src/log/redact.js";
import { useTempDirs } from "../helpers/tmp.js";

const SECRET = "plainkey-98765";

/** A stand-in for `process`: the two events, exit and stderr, recorded. */
function fakeProcess() {
  const proc = Object.assign(new EventEmitter(), {
    exits: [] as number[],
    written: "",
    exit(code: number) {
      proc.exits.push(code);
    },
    stderr: { write: (text: string) => (proc.written += text) },
  });
  return proc;
}

describe("process-level crash handlers (the gateway)", () => {
  const tempDir = useTempDirs();

  async function setup() {
    const logsDir = join(await tempDir(), "logs");
    const logger = createLogger({ logsDir, secrets: [SECRET] });
    const proc = fakeProcess();
    installCrashHandlers({ logger, redact: createRedactor([SECRET]), name: "troupe gateway" }, proc);
    const lines = async () =>
      (await readFile(join(logsDir, "troupe.log"), "utf8"))
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { level: number; msg: string; err?: { message?: string } });
    return { proc, lines };
  }

  it("logs an unhandled rejection, redacted, and keeps the process alive", async () => {
    const { proc, lines } = await setup();
    proc.emit("unhandledRejection", new Error(`store write failed for ${SECRET}`), Promise.resolve());
    proc.emit("unhandledRejection", "a bare reason", Promise.resolve());
    expect(proc.exits).toEqual([]);
    expect(proc.written).toBe("");
    const logged = await lines();
    expect(logged.map((l) => [l.level, l.msg])).toEqual([
      [50, "unhandled promise rejection; still running"],
      [50, "unhandled promise rejection; still running"],
    ]);
    expect(logged[0]?.err?.message).toBe("store write failed for [REDACTED]");
    expect(JSON.stringify(logged)).not.toContain(SECRET);
    expect(JSON.stringify(logged[1])).toContain("a bare reason");
  });

  it("logs an uncaught exception, says so in one line on stderr, and exits 1", async () => {
    const { proc, lines } = await setup();
    proc.emit("uncaughtException", new TypeError(`cannot read x of undefined (key ${SECRET})`));
    expect(proc.exits).toEqual([1]);
    expect(proc.written).toBe(
      "troupe gateway: uncaught exception: TypeError: cannot read x of undefined (key [REDACTED]); exiting, since its in-memory state may be inconsistent (the next start resumes from the last checkpoints)\n",
    );
    const logged = await lines();
    expect(logged.map((l) => [l.level, l.msg])).toEqual([[60, "uncaught exception; exiting"]]);
    expect(JSON.stringify(logged)).not.toContain(SECRET);
  });
});
