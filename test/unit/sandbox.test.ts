import { link, mkdir, rename, symlink, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ToolError } from "../../src/tools/contract.js";
import { resolveToolPath, ROOT_RECHECK_MS } from "../../src/tools/sandbox.js";
import { sandboxOf } from "../helpers/tools.js";
import { useTempDirs } from "../helpers/tmp.js";

describe("sandbox", () => {
  const tmp = useTempDirs();

  async function layout() {
    const root = await tmp();
    const ws = join(root, "ws");
    const outside = join(root, "outside");
    await mkdir(join(ws, "sub"), { recursive: true });
    await mkdir(outside);
    await writeFile(join(outside, "secret.txt"), "s3cret");
    return { root, ws, outside };
  }

  it("resolves relative paths against the workspace", async () => {
    const { ws } = await layout();
    expect(resolveToolPath(sandboxOf(ws), "sub/a.txt", "write")).toBe(join(ws, "sub/a.txt"));
    expect(resolveToolPath(sandboxOf(ws), "sub/../b.txt", "read")).toBe(join(ws, "b.txt"));
    expect(resolveToolPath(sandboxOf(ws), join(ws, "new/dir/file.txt"), "write")).toBe(join(ws, "new/dir/file.txt"));
  });

  it("refuses `..` traversal, absolute paths and `~` outside the workspace", async () => {
    const { ws, outside } = await layout();
    const sb = sandboxOf(ws);
    expect(() => resolveToolPath(sb, "../outside/secret.txt", "read")).toThrow(/outside the workspace.*restrictToWorkspace is on/);
    expect(() => resolveToolPath(sb, join(outside, "secret.txt"), "read")).toThrow(ToolError);
    expect(() => resolveToolPath(sb, "~/.bashrc", "read")).toThrow(/~\/\.bashrc is outside the workspace/);
    expect(() => resolveToolPath(sb, "/etc/passwd", "read")).toThrow(/outside the workspace/);
  });

  describe("the workspace's real path", () => {
    afterEach(() => vi.useRealTimers());

    it("is looked up once per ROOT_RECHECK_MS, not per call: a workspace symlink repointed is followed after that, and meanwhile nothing outside its old place is allowed", async () => {
      vi.useFakeTimers({ toFake: ["Date"] });
      const { root, ws, outside } = await layout();
      const link = join(root, "ws-link");
      await symlink(ws, link);
      const sb = sandboxOf(link);
      expect(resolveToolPath(sb, "sub/a.txt", "read")).toBe(join(link, "sub/a.txt"));
      // Repointed at the directory that was outside: within the interval the old real path still
      // holds, so the new place is refused (never the other way round)...
      await rename(link, join(root, "old-link"));
      await symlink(outside, link);
      expect(() => resolveToolPath(sb, "secret.txt", "read")).toThrow(/outside the workspace/);
      // ...and after it the workspace is where the link now leads.
      vi.setSystemTime(Date.now() + ROOT_RECHECK_MS);
      expect(resolveToolPath(sb, "secret.txt", "read")).toBe(join(link, "secret.txt"));
      expect(() => resolveToolPath(sb, join(ws, "sub"), "read")).toThrow(/outside the workspace/);
    });
  });

  it("follows symlinks before deciding: a link out of the workspace is an escape", async () => {
    const { ws, outside } = await layout();
    await symlink(outside, join(ws, "escape"));
    await symlink(join(outside, "secret.txt"), join(ws, "secret-link"));
    const sb = sandboxOf(ws);
    expect(() => resolveToolPath(sb, "escape/secret.txt", "read")).toThrow(/resolves to .*outside\/secret\.txt/);
    expect(() => resolveToolPath(sb, "secret-link", "read")).toThrow(/outside the workspace/);
    // A file that does not exist yet under an escaping link is refused too.
    expect(() => resolveToolPath(sb, "escape/new.txt", "write")).toThrow(/outside the workspace/);
  });

  it("follows a dangling symlink to what it names, and refuses hard links only when restricted", async () => {
    const { ws, outside } = await layout();
    await symlink(join(outside, "not-yet.txt"), join(ws, "dangling"));
    await link(join(outside, "secret.txt"), join(ws, "sub/hard.txt"));
    const sb = sandboxOf(ws);
    expect(() => resolveToolPath(sb, "dangling", "write")).toThrow(/dangling is outside the workspace .*\(it resolves to .*outside\/not-yet\.txt\)/);
    expect(() => resolveToolPath(sb, "sub/hard.txt", "read")).toThrow(/sub\/hard\.txt is a hard link \(2 names for one file\)/);
    expect(resolveToolPath({ ...sb, allowHardLinks: true }, "sub/hard.txt", "read")).toBe(join(ws, "sub/hard.txt"));
    expect(resolveToolPath({ ...sb, restrict: false }, "sub/hard.txt", "write")).toBe(join(ws, "sub/hard.txt"));
  });

  it("lets readable roots be read but never written", async () => {
    const { ws, outside } = await layout();
    const sb = sandboxOf(ws, [outside]);
    expect(resolveToolPath(sb, join(outside, "secret.txt"), "read")).toBe(join(outside, "secret.txt"));
    expect(() => resolveToolPath(sb, join(outside, "secret.txt"), "write")).toThrow(/outside the workspace/);
  });

  it("reaches anywhere when restrictToWorkspace is off, still expanding ~", async () => {
    const { ws } = await layout();
    const sb = { ...sandboxOf(ws), restrict: false };
    expect(resolveToolPath(sb, "~/notes.txt", "write")).toBe(join(homedir(), "notes.txt"));
    expect(resolveToolPath(sb, "/etc/hostname", "read")).toBe("/etc/hostname");
  });
});
