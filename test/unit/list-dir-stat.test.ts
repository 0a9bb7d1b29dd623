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
  return { ...actual, statSync: vi.fn(actual.statSync), readdirSync: vi.fn(actual.readdirSync) };
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

  it("reads a ZFS-like directory of 5,000 entries (st_size 5,002: its entry count) off the event loop", async () => {
    const ws = await tmp();
    const big = join(ws, "big");
    await mkdir(big);
    const names = Array.from({ length: 5_000 }, (_, i) => `f${String(i).padStart(4, "0")}`);
    for (const name of names) await writeFile(join(big, name), "");
    const actual = await vi.importActual<typeof fs>("node:fs");
    // On ZFS a directory's st_size is its entry count (+2): small by the byte threshold, however many entries.
    const stat = vi.mocked(fs.statSync).mockImplementation(((p: fs.PathLike, o?: fs.StatSyncOptions) => {
      const real = actual.statSync(p, o as fs.StatSyncOptions & { throwIfNoEntry: false });
      if (real && String(p) === big) return Object.assign(Object.create(Object.getPrototypeOf(real) as object) as fs.Stats, real, { size: names.length + 2 });
      return real;
    }) as typeof fs.statSync);
    const readWhole = vi.mocked(fs.readdirSync);
    readWhole.mockClear();
    try {
      const run = runner([listDirTool(sandboxOf(ws))], ws);
      expect(await run("list_dir", { path: "big", max_entries: 3 })).toBe(`${names.slice(0, 3).join("\n")}\n… and 4997 more (raise max_entries, or use glob)`);
      expect(readWhole.mock.calls.filter(([p]) => String(p) === big)).toHaveLength(0);
      // A small directory still reads at once, the same listing.
      expect(await run("list_dir", {})).toBe("big/");
    } finally {
      stat.mockImplementation(actual.statSync);
    }
  });
});
