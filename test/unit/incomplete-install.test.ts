import { describe, expect, it, vi } from "vitest";
import type * as Builtin from "../../src/builtin.js";

// The YAML parser is a package loaded at first use (src/builtin.ts's lazyRequire, Node's require, which
// vi.mock does not reach). Here its load is that of a package that is not installed, as in an install
// whose node_modules lost it; every other module loads as usual.
vi.mock("../../src/builtin.js", async (importOriginal) => {
  const actual = await importOriginal<typeof Builtin>();
  return { lazyRequire: (id: string) => actual.lazyRequire(id === "yaml" ? "troupe-no-such-package-yaml" : id) };
});

const { lazyRequire } = await vi.importActual<typeof Builtin>("../../src/builtin.js");
const { IncompleteInstallError } = await import("../../src/errors.js");
const { readSkill } = await import("../../src/context/skills.js");

describe("a package troupe loads at first use is missing", () => {
  it("is named, with the fix, not reported as whatever its caller was doing", () => {
    const load = lazyRequire("troupe-no-such-package");
    expect(load).toThrow(IncompleteInstallError);
    expect(load).toThrow(/troupe-no-such-package could not be loaded.*npm ci/);
  });

  it("a Node built-in that fails is rethrown as it is", () => {
    expect(lazyRequire("node:no-such-builtin")).toThrow(/no-such-builtin/);
    expect(lazyRequire("node:no-such-builtin")).not.toThrow(IncompleteInstallError);
  });

  it("a skill whose frontmatter needs the YAML parser fails with that error, not as invalid YAML", () => {
    // Needs YAML: a folded description (not one-line `key: value` pairs).
    const text = "---\nname: weather\ndescription: >\n  Current weather\n  and forecasts.\n---\nUse wttr.in.\n";
    expect(() => readSkill(text, "weather", "/ws/skills/weather/SKILL.md", "workspace", {})).toThrow(IncompleteInstallError);
  });

  it("a skill with one-line fields needs no parser and still loads", () => {
    const skill = readSkill("---\nname: weather\ndescription: Current weather.\n---\nUse wttr.in.\n", "weather", "/ws/skills/weather/SKILL.md", "workspace", {});
    expect(skill.description).toBe("Current weather.");
    expect(skill.warnings).toEqual([]);
  });
});
