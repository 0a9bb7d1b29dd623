import { chmod, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { unisolatedNotice, UNISOLATED_WARNING, type ExecSandboxSetting } from "../../src/tools/bwrap.js";
import { describeExecIsolation } from "../../src/tools/exec-isolation.js";
import { useTempDirs } from "../helpers/tmp.js";

// What status and doctor say of exec's isolation, at each of nanobot's workspace_sandbox_status levels
// (off, system-enforced, not enforced), plus the cases where exec cannot run.
describe("exec's isolation as status and doctor report it", () => {
  const tmp = useTempDirs();
  const tools = (sandbox: ExecSandboxSetting, restrictToWorkspace = true, enable = true) => ({ restrictToWorkspace, exec: { enable, sandbox } });
  const never = () => {
    throw new Error("bwrap must not be probed here");
  };

  /** A directory with an executable named bwrap: only its presence on PATH matters to the choice. */
  async function fakeBwrap(): Promise<string> {
    const dir = await tmp();
    await writeFile(join(dir, "bwrap"), "#!/bin/sh\n");
    await chmod(join(dir, "bwrap"), 0o755);
    return dir;
  }

  it("no bwrap under auto is a warning with the fix, and the one start-up notice of a command that runs exec", async () => {
    const empty = await tmp();
    const r = describeExecIsolation(tools("auto"), { PATH: empty }, "/c.json", never);
    expect(r.level).toBe("warn");
    expect(r.text).toMatch(/^not isolated: bubblewrap \(bwrap\) is not on PATH/);
    expect(r.fix).toMatch(/apt-get install bubblewrap.*set tools\.exec\.sandbox to "none"/);
    expect(unisolatedNotice(true, { kind: "none", why: "missing" })).toBe(UNISOLATED_WARNING);
    expect(unisolatedNotice(false, { kind: "none", why: "missing" })).toBeUndefined();
    expect(unisolatedNotice(true, { kind: "none", why: "off" })).toBeUndefined();
    expect(unisolatedNotice(true, { kind: "none", why: "unrestricted" })).toBeUndefined();
  });

  it("exec off and sandbox \"none\" are ok, each said as what it is", async () => {
    const empty = await tmp();
    expect(describeExecIsolation(tools("auto", true, false), { PATH: empty }, "/c.json", never)).toEqual({ level: "ok", text: "disabled (tools.exec.enable is false)" });
    expect(describeExecIsolation(tools("none"), { PATH: empty }, "/c.json", never)).toEqual({ level: "ok", text: 'not isolated: tools.exec.sandbox is "none" (on purpose)' });
  });

  it("an unrestricted workspace is a warning with the fix, with or without bwrap (nanobot's default restrict_to_workspace=false: full access)", async () => {
    for (const dir of [await tmp(), await fakeBwrap()]) {
      const r = describeExecIsolation(tools("auto", false), { PATH: dir }, "/c.json", never);
      expect(r.level).toBe("warn");
      expect(r.text).toBe("not isolated: tools.restrictToWorkspace is false, so commands run as this user, anywhere");
      expect(r.fix).toMatch(/^set tools\.restrictToWorkspace to true/);
    }
  });

  it('fails when exec cannot run: "bwrap" required but missing, or a bwrap that cannot build a sandbox', async () => {
    const empty = await tmp();
    const required = describeExecIsolation(tools("bwrap"), { PATH: empty }, "/c.json", never);
    expect(required.level).toBe("fail");
    expect(required.text).toMatch(/^tools\.exec\.sandbox: "bwrap" but bwrap is not on PATH; install bubblewrap/);
    const dir = await fakeBwrap();
    const broken = describeExecIsolation(tools("auto"), { PATH: dir }, "/c.json", () => "bwrap: setting up uid map: Permission denied");
    expect(broken).toMatchObject({ level: "fail", text: `bwrap (${join(dir, "bwrap")}) cannot start a sandbox here (bwrap: setting up uid map: Permission denied), so every exec call fails` });
    expect(broken.fix).toMatch(/user namespaces.*tools\.exec\.sandbox to "none"/);
  });

  it("a working bwrap is ok, named with its path (and its version when it says one)", async () => {
    const dir = await fakeBwrap();
    // The fake prints nothing for --version: no version is made up.
    expect(describeExecIsolation(tools("auto"), { PATH: dir }, "/c.json", () => undefined)).toEqual({ level: "ok", text: `sandboxed by bwrap (${join(dir, "bwrap")})` });
    await writeFile(join(dir, "bwrap"), '#!/bin/sh\n[ "$1" = --version ] && echo "bubblewrap 0.11.1"\n');
    expect(describeExecIsolation(tools("auto"), { PATH: dir }, "/c.json", () => undefined).text).toBe(`sandboxed by bwrap 0.11.1 (${join(dir, "bwrap")})`);
  });
});
