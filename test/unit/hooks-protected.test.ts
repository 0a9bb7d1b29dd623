import { mkdir, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/index.js";
import { openStore } from "../../src/store/store.js";
import { createBuiltinTools } from "../../src/tools/builtin/index.js";
import { requireBwrap, SKIP_BWRAP } from "../helpers/bwrap.js";
import { runner } from "../helpers/tools.js";
import { useTempDirs } from "../helpers/tmp.js";

/**
 * The workspace's hooks/ holds modules troupe runs with its own rights at its next start, outside
 * any sandbox: the agent's tools may read it, never write it, or a turn could plant code there.
 */
describe("the workspace's hooks/ is out of the tools' reach for writing", () => {
  const tempDir = useTempDirs();

  async function tools(sandbox: "bwrap" | "none") {
    const dir = await tempDir();
    const workspace = join(dir, "workspace");
    await mkdir(join(workspace, "hooks"), { recursive: true });
    await writeFile(join(workspace, "hooks", "sign.mjs"), "export default { name: 'sign' };\n");
    const store = await openStore(join(dir, "store"));
    const config = parseConfig({ tools: { restrictToWorkspace: true, exec: { sandbox } } }, join(dir, "config.json")).config;
    const run = runner(createBuiltinTools({ config, workspace, paths: { dataDir: dir, mediaDir: join(dir, "media"), configFile: join(dir, "config.json") }, store, channels: () => [] }), workspace);
    return { run, workspace, close: () => store.close() };
  }

  it("write_file and edit_file are refused there, with the reason; read_file reads it", async () => {
    const t = await tools("none");
    try {
      const write = await t.run("write_file", { path: "hooks/evil.mjs", content: "export default { name: 'evil' };" });
      expect(write).toMatch(/^Error: access denied: hooks\/evil\.mjs is in .*hooks, which holds hook modules troupe runs with its own rights/);
      const edit = await t.run("edit_file", { path: "hooks/sign.mjs", old_text: "sign", new_text: "evil" });
      expect(edit).toMatch(/^Error: access denied: hooks\/sign\.mjs is in /);
      expect(await t.run("read_file", { path: "hooks/sign.mjs" })).toContain("export default { name: 'sign' }");
      expect(await readdir(join(t.workspace, "hooks"))).toEqual(["sign.mjs"]);
      // The rest of the workspace is writable as ever.
      expect(await t.run("write_file", { path: "hooksnot/x.mjs", content: "ok" })).toMatch(/^Wrote/);
    } finally {
      await t.close();
    }
  });

  it.skipIf(SKIP_BWRAP)("a command in the bwrap sandbox finds hooks/ read-only", async () => {
    requireBwrap();
    const t = await tools("bwrap");
    try {
      // Past the guard's deny list (no hooks/ path in the redirect), so the mount itself is what refuses.
      const r = await t.run("exec", { command: "(cd hooks && echo planted > evil.mjs); touch elsewhere.txt && echo wrote-elsewhere" });
      expect(r).toMatch(/Read-only file system/);
      expect(r).toContain("wrote-elsewhere");
      expect(await readdir(join(t.workspace, "hooks"))).toEqual(["sign.mjs"]);
    } finally {
      await t.close();
    }
  });
});
