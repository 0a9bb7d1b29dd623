import { readdir, stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { webFetchTool } from "../../src/tools/builtin/web-fetch.js";
import { createSsrfGuard } from "../../src/tools/ssrf.js";
import { startFakeWeb, type FakeWeb } from "../fixtures/fake-web.js";
import { PNG_1PX } from "../helpers/documents.js";
import { useTempDirs } from "../helpers/tmp.js";
import { runner } from "../helpers/tools.js";

/** A distinct 1,000-byte PNG for each n (bytes after IEND change its content, not its type). */
const image = (n: number) => Buffer.concat([PNG_1PX, Buffer.alloc(1_000 - PNG_1PX.length, n)]);

/**
 * Fetched images are kept in <data dir>/media/web for the requests that show them; the folder is kept
 * under a size cap, oldest first. (nanobot holds them in memory only: nanobot/agent/tools/web.py.)
 */
describe("web_fetch's saved images", () => {
  const tmp = useTempDirs();
  let web: FakeWeb | undefined;
  afterEach(async () => {
    await web?.close();
    web = undefined;
  });

  async function setup(mediaCapBytes: number) {
    web = await startFakeWeb({
      "/img": (_req, res, url) => res.writeHead(200, { "content-type": "image/png" }).end(image(Number(url.searchParams.get("n")))),
    });
    const mediaDir = await tmp();
    const tool = webFetchTool({ guard: createSsrfGuard(["127.0.0.1"]), timeoutMs: 5_000, mediaDir, mediaCapBytes });
    const run = runner([tool], "/tmp");
    const dir = join(mediaDir, "web");
    const w = web;
    /** Fetches image n; answers the file it was saved as. */
    const fetch = async (n: number) => {
      const result = await run("web_fetch", { url: `${w.origin}/img?n=${n}` });
      const saved = /saved as (.+)\]$/.exec(result)?.[1];
      if (!saved) throw new Error(`no image saved: ${result}`);
      return { result, name: saved.slice(dir.length + 1) };
    };
    /** Dates a file back (file times are coarse: two writes in a row can share one). */
    const age = (name: string, hours: number) => utimes(join(dir, name), new Date(Date.now() - hours * 3600_000), new Date(Date.now() - hours * 3600_000));
    const files = async () => (await readdir(dir)).sort();
    return { tool, dir, fetch, age, files };
  }

  it("keeps the folder under its cap by removing the oldest images first; an image fetched again is new again", async () => {
    const { dir, fetch, age, files } = await setup(3_000);
    const [a, b, c] = [await fetch(1), await fetch(2), await fetch(3)];
    await age(a.name, 3);
    await age(b.name, 2);
    await age(c.name, 1);
    expect(await files()).toEqual([a.name, b.name, c.name].sort());
    const d = await fetch(4);
    expect(await files()).toEqual([b.name, c.name, d.name].sort());
    // b fetched again is written again: c is now the oldest.
    expect((await fetch(2)).name).toBe(b.name);
    const e = await fetch(5);
    expect(await files()).toEqual([b.name, d.name, e.name].sort());
    let total = 0;
    for (const f of await files()) total += (await stat(join(dir, f))).size;
    expect(total).toBeLessThanOrEqual(3_000);
  });

  it("never removes the image just saved, nor a temp file another fetch is writing, even under a cap smaller than one image", async () => {
    const { tool, dir, fetch, age, files } = await setup(500);
    const a = await fetch(1);
    await age(a.name, 1);
    const writing = `${a.name}.4242.0123456789ab.part`;
    await writeFile(join(dir, writing), "being written");
    const b = await fetch(2);
    expect(await files()).toEqual([b.name, writing].sort());
    expect(await tool.imageOf!(b.result)).toBeDefined();
    expect(await tool.imageOf!(a.result)).toBeUndefined();
  });
});
