import { describe, expect, it } from "vitest";
import { pathWithoutBwrap, requireBwrap, SKIP_BWRAP } from "../helpers/bwrap.js";
import { runCli } from "../helpers/cli.js";
import { writeHome } from "../helpers/daemon.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";

// Every command that runs exec, or reports on troupe's set-up, says whether exec is isolated: not only
// the gateway (nanobot reports its workspace sandbox status the same way: off, system-enforced, or not).

const NOTICE = /exec is not isolated: bubblewrap \(bwrap\) is not on PATH/g;
const FIX = /apt-get install bubblewrap.*set tools\.exec\.sandbox to "none"/;

/** A command's line for `name` (status: "exec:     …"; doctor: "warn  exec: …"). */
const lineOf = (out: string, re: RegExp) => out.split("\n").find((l) => re.test(l));

describe("whether exec is isolated is said by troupe agent, status and doctor", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  closeAfterEach(() => [fake]);

  async function home(tools: Record<string, unknown> = {}) {
    const dir = await tmp();
    await writeHome(dir, fake!.url, { config: { gateway: { port: 0 }, tools } });
    return dir;
  }

  it("an in-process troupe agent without bwrap says once on stderr that exec is not isolated (and it is not)", async () => {
    fake = await startFakeOpenAi([{ toolCalls: [{ name: "exec", arguments: { command: 'cat "$(dirname "$PWD")/config.json"' } }] }, { content: "Done." }]);
    const dir = await home();
    const r = await runCli(["agent", "-m", "go"], { TROUPE_HOME: dir, PATH: await pathWithoutBwrap(await tmp()) });
    expect(r.stdout).toBe("Done.\n");
    expect(r.code).toBe(0);
    expect(r.stderr.match(NOTICE)).toHaveLength(1);
    expect(r.stderr).toMatch(/^warning: exec is not isolated/);
    expect(r.stderr).toMatch(FIX);
    // What the notice is about: the command read the config next to the workspace.
    const result = fake.requests[1]!.body.messages.filter((m) => m.role === "tool").map((m) => String(m.content));
    expect(result[0]).toContain(fake.url);
  }, 60_000);

  it('troupe agent says nothing when exec is off, or unsandboxed on purpose (sandbox "none")', async () => {
    fake = await startFakeOpenAi([], () => ({ content: "Done." }));
    const path = await pathWithoutBwrap(await tmp());
    for (const tools of [{ exec: { enable: false } }, { exec: { sandbox: "none" } }]) {
      const r = await runCli(["agent", "-m", "go"], { TROUPE_HOME: await home(tools), PATH: path });
      expect(r.stdout).toBe("Done.\n");
      expect(r.stderr).toBe("");
    }
  }, 60_000);

  it("status shows an exec line: not isolated with the fix, or sandboxed by bwrap and its version", async () => {
    fake = await startFakeOpenAi([]);
    const dir = await home();
    const without = await runCli(["status"], { TROUPE_HOME: dir, PATH: await pathWithoutBwrap(await tmp()) });
    expect(without.code).toBe(0);
    const line = lineOf(without.stdout, /^exec: /);
    expect(line).toMatch(/^exec: +not isolated: bubblewrap \(bwrap\) is not on PATH/);
    expect(line).toMatch(FIX);

    const off = await runCli(["status"], { TROUPE_HOME: await home({ exec: { enable: false } }), PATH: await pathWithoutBwrap(await tmp()) });
    expect(lineOf(off.stdout, /^exec: /)).toMatch(/^exec: +disabled \(tools\.exec\.enable is false\)$/);
  });

  it.skipIf(SKIP_BWRAP)("with bwrap on PATH status names it and its version", async () => {
    requireBwrap();
    fake = await startFakeOpenAi([]);
    const r = await runCli(["status"], { TROUPE_HOME: await home() });
    expect(lineOf(r.stdout, /^exec: /)).toMatch(/^exec: +sandboxed by bwrap \d+\.\d+(\.\d+)? \(\/\S+\/bwrap\)$/);
  });

  it("doctor warns (exit 0) without bwrap, fails when tools.exec.sandbox requires it, and is ok with it", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "p" }));
    const path = await pathWithoutBwrap(await tmp());
    const warned = await runCli(["doctor"], { TROUPE_HOME: await home(), PATH: path });
    expect(warned.code).toBe(0);
    expect(lineOf(warned.stdout, / exec: /)).toMatch(/^warn +exec: not isolated: bubblewrap \(bwrap\) is not on PATH.*apt-get install bubblewrap/);
    expect(warned.stdout).not.toContain("FAIL");
    expect(warned.stdout.trim().split("\n").at(-1)).toBe("no check failed; 1 warning");

    const required = await runCli(["doctor"], { TROUPE_HOME: await home({ exec: { sandbox: "bwrap" } }), PATH: path });
    expect(required.code).toBe(1);
    expect(lineOf(required.stdout, / exec: /)).toMatch(/^FAIL +exec: tools\.exec\.sandbox: "bwrap" but bwrap is not on PATH; install bubblewrap/);

    if (SKIP_BWRAP) return;
    requireBwrap();
    const fine = await runCli(["doctor"], { TROUPE_HOME: await home() });
    expect(fine.code).toBe(0);
    expect(lineOf(fine.stdout, / exec: /)).toMatch(/^ok +exec: sandboxed by bwrap \d/);
    expect(fine.stdout.trim().split("\n").at(-1)).toBe("all checks passed");
    expect(fine.stdout).not.toMatch(/^warn /m);
  }, 60_000);
});
