import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/index.js";
import { openStore } from "../../src/store/store.js";
import { createBuiltinTools } from "../../src/tools/builtin/index.js";
import { requireBwrap, SKIP_BWRAP } from "../helpers/bwrap.js";
import { runner } from "../helpers/tools.js";
import { useTempDirs } from "../helpers/tmp.js";

const KEY = "sk-unit-config-elsewhere-0123456789";

/**
 * `--config FILE` may put the config (api keys) outside the data dir, even in a directory the
 * sandbox shows (the workspace here): the command cannot read it, wherever it is.
 */
describe.skipIf(SKIP_BWRAP)("exec's sandbox hides a config file that lives outside the data dir", () => {
  const tempDir = useTempDirs();

  it("a config file inside the workspace cannot be read or written; the rest of the workspace is as ever", async () => {
    requireBwrap();
    const dir = await tempDir();
    const workspace = join(dir, "workspace");
    await mkdir(workspace, { recursive: true });
    const configFile = join(workspace, "config.json");
    await writeFile(configFile, JSON.stringify({ providers: { openai: { apiKey: KEY } } }));
    await writeFile(join(workspace, "notes.txt"), "mine\n");
    const store = await openStore(join(dir, "data", "store"));
    try {
      const config = parseConfig({ tools: { restrictToWorkspace: true, exec: { sandbox: "bwrap" } } }, configFile).config;
      const paths = { dataDir: join(dir, "data"), mediaDir: join(dir, "data", "media"), configFile };
      const run = runner(createBuiltinTools({ config, workspace, paths, store, channels: () => [] }), workspace);
      const out = await run("exec", { command: "cat notes.txt; cat config.json; echo '{}' > config.json; echo end" });
      expect(out).not.toContain(KEY);
      expect(out).toMatch(/^mine\nend\nSTDERR:\n/);
      expect(out).toMatch(/cat: config\.json: Permission denied/);
      expect(await readFile(configFile, "utf8")).toContain(KEY);
    } finally {
      await store.close();
    }
  });
});
