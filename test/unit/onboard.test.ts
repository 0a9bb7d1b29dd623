import { chmod, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { onboard } from "../../src/cli/onboard.js";
import { loadConfig } from "../../src/config/index.js";
import { useTempDirs } from "../helpers/tmp.js";

const modeOf = async (path: string) => (await stat(path)).mode & 0o777;

describe("onboard keeps the files with secrets private", () => {
  const tmp = useTempDirs();

  it("writes config.json with mode 600 and creates a missing data dir with mode 700", async () => {
    const home = join(await tmp(), "data");
    const r = await onboard(await loadConfig({ TROUPE_HOME: home }));
    expect(r.config).toBe("created");
    expect((await modeOf(join(home, "config.json"))).toString(8)).toBe("600");
    expect((await modeOf(home)).toString(8)).toBe("700");
    expect(r.warnings).toEqual([]);
  });

  it("warns, one line each with the chmod command, when config.json or the data dir is open to others", async () => {
    const home = await tmp();
    await writeFile(join(home, "config.json"), "{}\n");
    await chmod(join(home, "config.json"), 0o644);
    await chmod(home, 0o755);
    const r = await onboard(await loadConfig({ TROUPE_HOME: home }));
    expect(r.config).toBe("kept");
    expect(r.warnings).toEqual([
      `warning: ${join(home, "config.json")} (API keys, tokens) is open to other users (mode 644); run: chmod 600 ${join(home, "config.json")}`,
      `warning: the data dir ${home} is open to other users (mode 755); run: chmod 700 ${home}`,
    ]);
    // It warns, it does not change the user's modes behind their back.
    expect((await modeOf(join(home, "config.json"))).toString(8)).toBe("644");
  });
});
