import { mkdir, writeFile } from "node:fs/promises";
import * as fs from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { listDirTool } from "../../src/tools/builtin/list-dir.js";
import { runner, sandboxOf } from "../helpers/tools.js";
import { useTempDirs } from "../helpers/tmp.js";

// statSync counted: the sandbox's look at the path (hard links) and list_dir's (sync or thread-pool read) are one.
vi.mock("node:fs", async (importOriginal) => {
  const actual = await importOriginal<typeof fs>();
  return { ...actual, statSync: vi.fn(actual.statSync) };
});

describe("list_dir's look at the directory", () => {
  const tmp = useTempDirs();

  it("stats the directory once per call when restricted (the sandbox's stat serves the read), twice never", async () => {
    const ws = await tmp();
    await mkdir(join(ws, "sub"));
    await writeFile(join(ws, "a.txt"), "a");
    const stat = vi.mocked(fs.statSync);
    const restricted = runner([listDirTool(sandboxOf(ws))], ws);
    const open = runner([listDirTool({ ...sandboxOf(ws), restrict: false })], ws);
    const linksAllowed = runner([listDirTool({ ...sandboxOf(ws), allowHardLinks: true })], ws);
    for (const [run, name] of [[restricted, "restricted"], [open, "unrestricted"], [linksAllowed, "hard links allowed"]] as const) {
      stat.mockClear();
      expect(await run("list_dir", {}), name).toBe("sub/\na.txt");
      expect(stat.mock.calls.filter(([p]) => p === ws), name).toHaveLength(1);
    }
    // What the one stat found still decides: a file, a missing path, a path through a file.
    expect(await restricted("list_dir", { path: "a.txt" })).toMatch(/a.txt is not a directory/);
    expect(await restricted("list_dir", { path: "nope" })).toMatch(/directory not found: nope/);
    expect(await restricted("list_dir", { path: "a.txt/x" })).toMatch(/directory not found: a.txt\/x|a.txt\/x is not a directory/);
  });
});
