import { describe, expect, it } from "vitest";
import { closeEach, detachedDaemon, type Closable } from "../helpers/teardown.js";

/** A thing that records its closing in `log`, and fails it when told. */
const thing = (name: string, log: string[], fail = false): Closable => ({
  close: async () => {
    log.push(name);
    if (fail) throw new Error(`${name} failed to close`);
  },
});

describe("the tests' teardown (closeEach, behind closeAfterEach)", () => {
  it("closes in the order listed, shuts a daemon down rather than closing it, and skips what is not there", async () => {
    const log: string[] = [];
    const daemon = { shutdown: async () => void log.push("daemon shut down"), close: async () => void log.push("daemon closed") };
    await closeEach([daemon, undefined, thing("fake", log)], new WeakSet());
    expect(log).toEqual(["daemon shut down", "fake"]);
  });

  it("closes each thing once, though a later test still names it", async () => {
    const log: string[] = [];
    const closed = new WeakSet<Closable>();
    const fake = thing("fake", log);
    await closeEach([thing("store 1", log), fake], closed);
    await closeEach([thing("store 2", log), fake], closed);
    expect(log).toEqual(["store 1", "fake", "store 2"]);
  });

  it("a failing close fails the teardown, after the rest are closed", async () => {
    const log: string[] = [];
    await expect(closeEach([thing("daemon", log, true), thing("fake", log)], new WeakSet())).rejects.toThrow("daemon failed to close");
    expect(log).toEqual(["daemon", "fake"]);
    const both = closeEach([thing("a", log, true), thing("b", log, true)], new WeakSet());
    await expect(both).rejects.toBeInstanceOf(AggregateError);
    await both.catch((e: AggregateError) => expect(e.errors.map((x: Error) => x.message)).toEqual(["a failed to close", "b failed to close"]));
  });

  it("a detached daemon's close fails when `troupe daemon stop` fails, and passes when it was not running", async () => {
    const calls: string[][] = [];
    const failing = detachedDaemon("/nonexistent/home-a", async (args) => (calls.push(args), { code: 1, stdout: "", stderr: "troupe daemon (pid 42) did not stop within 20s" }));
    await expect(closeEach([failing], new WeakSet())).rejects.toThrow("did not stop within 20s");
    const stopped = detachedDaemon("/nonexistent/home-b", async (args) => (calls.push(args), { code: 0, stdout: "troupe daemon is not running", stderr: "" }));
    await closeEach([stopped], new WeakSet());
    expect(calls).toEqual([["daemon", "stop"], ["daemon", "stop"]]);
  });
});
