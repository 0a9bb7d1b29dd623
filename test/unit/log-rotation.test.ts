import { execFileSync } from "node:child_process";
import { appendFileSync, existsSync, readFileSync, renameSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createLogger, LOG_ROTATION } from "../../src/log/logger.js";
import { CHECK_EVERY_MS, createRotatingFile } from "../../src/log/rotating-file.js";
import { useTempDirs } from "../helpers/tmp.js";

const lines = async (file: string) => (await readFile(file, "utf8")).split("\n").filter(Boolean).map((l) => JSON.parse(l) as { n?: number; msg: string });

describe("log rotation", () => {
  const tempDir = useTempDirs();

  it("caps the daemon's log by default at a few files of a few MB", () => {
    expect(LOG_ROTATION.maxBytes).toBe(10 * 1024 * 1024);
    expect(LOG_ROTATION.maxFiles).toBe(5);
  });

  it("rolls troupe.log over into troupe.log.1 … keeping at most maxFiles files, each under the cap, no line lost in between", async () => {
    const logsDir = join(await tempDir(), "logs");
    const log = createLogger({ logsDir, rotate: { maxBytes: 4096, maxFiles: 3 } });
    for (let n = 0; n < 400; n++) log.info({ n, pad: "x".repeat(60) }, "line");
    log.flush();
    const files = ["troupe.log", "troupe.log.1", "troupe.log.2"].map((f) => join(logsDir, f));
    for (const f of files) expect((await stat(f)).size).toBeLessThanOrEqual(4096);
    expect(existsSync(join(logsDir, "troupe.log.3"))).toBe(false);
    // Oldest kept first: the numbers run on without a gap across the files and end with the last line written.
    const kept = [...(await lines(files[2]!)), ...(await lines(files[1]!)), ...(await lines(files[0]!))].map((l) => l.n);
    expect(kept.at(-1)).toBe(399);
    expect(kept).toEqual(Array.from({ length: kept.length }, (_, i) => 400 - kept.length + i));
    expect(kept.length).toBeGreaterThan(40);
  });

  it("a second process writing the same log follows a rotation made by the first", async () => {
    const logsDir = join(await tempDir(), "logs");
    const daemon = createLogger({ logsDir, rotate: { maxBytes: 2048, maxFiles: 2 } });
    const agent = createLogger({ logsDir, rotate: { maxBytes: 2048, maxFiles: 2 } });
    agent.info("agent started");
    for (let n = 0; n < 40; n++) daemon.info({ n, pad: "y".repeat(60) }, "daemon line");
    agent.info("agent after the rotation");
    daemon.flush();
    agent.flush();
    expect((await lines(join(logsDir, "troupe.log"))).map((l) => l.msg)).toContain("agent after the rotation");
    expect((await stat(join(logsDir, "troupe.log"))).size).toBeLessThanOrEqual(2048);
  });

  it("writes the lines of one turn of the event loop together at its end; flush, end and the process's exit write them at once", async () => {
    const logsDir = join(await tempDir(), "logs");
    const file = join(logsDir, "troupe.log");
    const log = createLogger({ logsDir });
    const text = () => (existsSync(file) ? readFileSync(file, "utf8") : "");
    log.info("one");
    log.info("two");
    // Not a write per line: nothing yet within this turn of the loop...
    expect(text()).toBe("");
    await new Promise((resolve) => setImmediate(resolve));
    // ...both at its end, in order.
    expect((await lines(file)).map((l) => l.msg)).toEqual(["one", "two"]);
    log.info("three");
    log.flush();
    expect((await lines(file)).map((l) => l.msg)).toEqual(["one", "two", "three"]);
    // A process that logs and exits at once (process.exit, as the crash handler does) still writes its lines.
    const script = `import { createLogger } from ${JSON.stringify(join(import.meta.dirname, "../../src/log/logger.ts"))};
      const log = createLogger({ logsDir: ${JSON.stringify(join(logsDir, "..", "child"))} });
      log.info("before the exit"); log.warn("the last line"); process.exit(3);`;
    expect(() => execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { stdio: "pipe" })).toThrow(/status 3|code 3|Command failed/);
    expect((await lines(join(logsDir, "..", "child", "troupe.log"))).map((l) => l.msg)).toEqual(["before the exit", "the last line"]);
  }, 60_000);

  it("follows what another process did to the file (rolled it away, wrote to it) within CHECK_EVERY_MS, not by a stat per line", async () => {
    const logsDir = join(await tempDir(), "logs");
    const file = join(logsDir, "troupe.log");
    let clock = 0;
    const writer = createRotatingFile(file, { maxBytes: 1024, maxFiles: 3 }, () => clock);
    const line = (msg: string) => `${JSON.stringify({ msg })}\n`;
    // Each line written out at once (the clock is read when lines go out, at the end of the loop's turn).
    const writeNow = (text: string) => {
      writer.write(text);
      writer.flushSync();
    };
    writeNow(line("first"));
    // Another process rolls the file over, as the logger does, and starts a new one.
    renameSync(file, `${file}.1`);
    appendFileSync(file, line("the other process's line"));
    // Within the interval the file is not looked at (no stat per line): the line goes on where it went.
    writeNow(line("within the interval"));
    clock += CHECK_EVERY_MS;
    writeNow(line("after the rotation"));
    expect((await lines(file)).map((l) => l.msg)).toEqual(["the other process's line", "after the rotation"]);
    expect((await lines(`${file}.1`)).map((l) => l.msg)).toEqual(["first", "within the interval"]);
    // Its lines count toward the cap once seen: the next line that would pass it rolls the file over.
    appendFileSync(file, line("x".repeat(950)));
    clock += CHECK_EVERY_MS;
    writeNow(line("over the cap"));
    expect((await lines(file)).map((l) => l.msg)).toEqual(["over the cap"]);
    expect((await lines(`${file}.1`)).map((l) => l.msg.slice(0, 5))).toEqual(["the o", "after", "xxxxx"]);
    // Removed by another process: started again.
    const { rm } = await import("node:fs/promises");
    await rm(file);
    clock += CHECK_EVERY_MS;
    writeNow(line("after the removal"));
    expect((await lines(file)).map((l) => l.msg)).toEqual(["after the removal"]);
    writer.end();
  });
});
