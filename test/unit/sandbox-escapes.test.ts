import { link, mkdir, readFile, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { editFileTool } from "../../src/tools/builtin/edit-file.js";
import { globTool } from "../../src/tools/builtin/glob.js";
import { grepTool } from "../../src/tools/builtin/grep.js";
import { listDirTool } from "../../src/tools/builtin/list-dir.js";
import { readFileTool } from "../../src/tools/builtin/read-file.js";
import { writeFileTool } from "../../src/tools/builtin/write-file.js";
import type { Sandbox } from "../../src/tools/sandbox.js";
import { runner, sandboxOf } from "../helpers/tools.js";
import { useTempDirs } from "../helpers/tmp.js";

const SECRET = "sk-never-leak-4242";

/**
 * The escapes a model could try with the file tools when tools.restrictToWorkspace is on: a data dir
 * holding config.json (the workspace's parent, as by default) and a directory outside with a secret.
 */
describe("file tools keep to the workspace (restricted)", () => {
  const tmp = useTempDirs();

  async function layout(over: Partial<Sandbox> = {}) {
    const root = await tmp();
    const ws = join(root, "workspace");
    const outside = join(root, "outside");
    await mkdir(ws);
    await mkdir(outside);
    await writeFile(join(root, "config.json"), JSON.stringify({ providers: { openai: { apiKey: SECRET } } }));
    await writeFile(join(outside, "secret.txt"), `TOKEN=${SECRET}\n`);
    await writeFile(join(ws, "mine.txt"), "mine\n");
    const sb = { ...sandboxOf(ws), ...over };
    const run = runner([readFileTool(sb), writeFileTool(sb), editFileTool(sb), listDirTool(sb), globTool(sb), grepTool(sb)], ws);
    return { root, ws, outside, run };
  }

  it("glob refuses a pattern that climbs out with `..`, saying why", async () => {
    const { run } = await layout();
    const r = await run("glob", { pattern: "../*" });
    expect(r).toMatch(/^Error: glob pattern \.\.\/\* climbs out of the search directory with `\.\.`.*restrictToWorkspace is on/);
    expect(r).not.toContain("config.json");
    expect(await run("glob", { pattern: "{..,x}/*.json" })).toMatch(/^Error: glob pattern .* climbs out/);
  });

  it("glob refuses an absolute pattern", async () => {
    const { run } = await layout();
    const r = await run("glob", { pattern: "/etc/pass*" });
    expect(r).toMatch(/^Error: glob pattern \/etc\/pass\* is absolute.*restrictToWorkspace is on/);
    expect(r).not.toContain("/etc/passwd");
  });

  it("glob does not list files through a symlinked directory that leads out", async () => {
    const { ws, outside, run } = await layout();
    await symlink(outside, join(ws, "mid"));
    expect(await run("glob", { pattern: "mid/*" })).toMatch(/^No files match mid\/\*/);
    expect(await run("glob", { pattern: "mid/**" })).toMatch(/^No files match/);
    expect(await run("list_dir", { recursive: true })).toBe("mine.txt");
  });

  it("grep refuses a glob parameter that climbs out, and never reads the file", async () => {
    const { run } = await layout();
    const r = await run("grep", { pattern: "apiKey", glob: "../config.json", output_mode: "content" });
    expect(r).toMatch(/^Error: glob pattern \.\.\/config\.json climbs out/);
    expect(r).not.toContain(SECRET);
  });

  it("grep does not read through a symlinked directory or a symlinked file that lead out", async () => {
    const { root, ws, outside, run } = await layout();
    await symlink(outside, join(ws, "mid"));
    await symlink(join(root, "config.json"), join(ws, "cfg.json"));
    for (const glob of ["mid/*", "mid/**", "**/*", "*.json"]) {
      const r = await run("grep", { pattern: SECRET, glob, output_mode: "content" });
      expect(r, glob).toMatch(/^No matches/);
    }
  });

  it("a hard link inside the workspace to a file outside is refused by read_file, write_file and edit_file", async () => {
    const { root, ws, run } = await layout();
    await link(join(root, "config.json"), join(ws, "hard.txt"));
    const before = await readFile(join(root, "config.json"), "utf8");
    const why = /hard\.txt is a hard link \(2 names for one file\).*tools\.allowHardLinks/;
    const read = await run("read_file", { path: "hard.txt" });
    expect(read).toMatch(why);
    expect(read).not.toContain(SECRET);
    expect(await run("write_file", { path: "hard.txt", content: "pwned" })).toMatch(why);
    expect(await run("edit_file", { path: "hard.txt", old_text: SECRET, new_text: "pwned" })).toMatch(why);
    expect(await readFile(join(root, "config.json"), "utf8")).toBe(before);
  });

  it("grep skips hard-linked files and says so", async () => {
    const { root, ws, run } = await layout();
    await link(join(root, "config.json"), join(ws, "hard.txt"));
    const r = await run("grep", { pattern: SECRET, output_mode: "content" });
    expect(r).toMatch(/^No matches/);
    expect(r).toMatch(/1 hard-linked file\(s\) skipped/);
    expect(await run("grep", { pattern: SECRET, path: "hard.txt" })).toMatch(/hard link/);
  });

  it("tools.allowHardLinks lets hard links be used", async () => {
    const { ws, run } = await layout({ allowHardLinks: true });
    await link(join(ws, "mine.txt"), join(ws, "also-mine.txt"));
    expect(await run("read_file", { path: "also-mine.txt" })).toBe("1| mine\n\n(End of file — 1 lines total)");
    expect(await run("grep", { pattern: "mine", output_mode: "count" })).toBe("also-mine.txt: 1\nmine.txt: 1\n\n(total matches: 2 in 2 files)");
  });

  it("write_file through a dangling symlink does not create a file outside", async () => {
    const { ws, outside, run } = await layout();
    await symlink(join(outside, "planted.txt"), join(ws, "dangling"));
    await symlink(join(outside, "newdir"), join(ws, "dangling-dir"));
    expect(await run("write_file", { path: "dangling", content: "x" })).toMatch(/outside the workspace .*\(it resolves to .*outside\/planted\.txt\)/);
    expect(await run("write_file", { path: "dangling-dir/f.txt", content: "x" })).toMatch(/outside the workspace/);
    await expect(stat(join(outside, "planted.txt"))).rejects.toThrow(/ENOENT/);
    await expect(stat(join(outside, "newdir"))).rejects.toThrow(/ENOENT/);
  });

  it("write_file through a dangling symlink that stays inside still works", async () => {
    const { ws, run } = await layout();
    await symlink("later.txt", join(ws, "alias"));
    expect(await run("write_file", { path: "alias", content: "ok" })).toBe("Wrote 2 bytes to alias");
    expect(await readFile(join(ws, "later.txt"), "utf8")).toBe("ok");
  });

  it("a symlink loop is refused, not followed forever", async () => {
    const { ws, run } = await layout();
    await symlink("loop-b", join(ws, "loop-a"));
    await symlink("loop-a", join(ws, "loop-b"));
    expect(await run("write_file", { path: "loop-a", content: "x" })).toMatch(/^Error: /);
  });
});
