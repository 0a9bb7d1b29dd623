import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { webFetchTool } from "../../src/tools/builtin/web-fetch.js";
import { createSsrfGuard } from "../../src/tools/ssrf.js";
import { attachToolImages } from "../../src/tools/tool-images.js";
import type { ChatMessage } from "../../src/providers/messages.js";
import { answer, redirectTo, startFakeWeb, type FakeWeb } from "../fixtures/fake-web.js";
import { PNG_1PX } from "../helpers/documents.js";
import { useTempDirs } from "../helpers/tmp.js";
import { runner } from "../helpers/tools.js";

/** nanobot's WebFetchTool answers an image/* URL with the image and "(Image fetched from: <url>)" (nanobot/agent/tools/web.py). */
describe("web_fetch on an image URL", () => {
  const tmp = useTempDirs();
  let web: FakeWeb | undefined;
  afterEach(async () => {
    await web?.close();
    web = undefined;
  });

  async function setup(whitelist = ["127.0.0.1"]) {
    web = await startFakeWeb({
      "/pixel.png": answer("image/png", PNG_1PX),
      "/octet": answer("application/octet-stream", PNG_1PX),
      "/broken.png": answer("image/png", Buffer.from([0x89, 0x50])),
      "/picture.bmp": answer("image/bmp", Buffer.from("BM\0\0\0\0")),
      "/image.png": redirectTo("http://10.1.2.3/secret.png"),
    });
    const mediaDir = await tmp();
    const tool = webFetchTool({ guard: createSsrfGuard(whitelist), timeoutMs: 5_000, mediaDir });
    return { w: web, mediaDir, tool, fetch: runner([tool], "/tmp") };
  }

  it("answers with where the image came from and hands the image itself to the next model request", async () => {
    const { w, mediaDir, tool, fetch } = await setup();
    const url = `${w.origin}/pixel.png`;
    const result = await fetch("web_fetch", { url });
    const saved = join(mediaDir, "web", (await readdir(join(mediaDir, "web")))[0]!);
    expect(result).toBe(`(Image fetched from: ${url})\n[image/png, ${PNG_1PX.length} bytes, saved as ${saved}]`);
    expect(await readFile(saved)).toEqual(PNG_1PX);
    const part = { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_1PX.toString("base64")}` } };
    expect(await tool.imageOf!(result)).toEqual(part);
    // Through the request builder, as read_file's images go.
    const messages: ChatMessage[] = [
      { role: "user", content: "what is at this URL?" },
      { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "web_fetch", arguments: JSON.stringify({ url }) } }] },
      { role: "tool", tool_call_id: "c1", name: "web_fetch", content: result },
    ];
    const sent = await attachToolImages(messages, () => tool);
    expect(sent.at(-1)).toEqual({ role: "user", content: [part, { type: "text", text: "[Image 1 above: the web_fetch result of call c1]" }] });
    // A server that does not say it is an image, sending one, is still understood.
    expect(await fetch("web_fetch", { url: `${w.origin}/octet` })).toMatch(/^\(Image fetched from: .*\/octet\)\n\[image\/png, /);
  });

  it("keeps the address checks for images: a redirect to a private address is refused before the image is fetched (nanobot: test_web_fetch_blocks_private_redirect_before_returning_image)", async () => {
    const { w, mediaDir, fetch } = await setup();
    expect(await fetch("web_fetch", { url: `${w.origin}/image.png` })).toMatch(/^Error: refused to fetch 10\.1\.2\.3: it is a private-network address/);
    const strict = runner([webFetchTool({ guard: createSsrfGuard([]), timeoutMs: 5_000, mediaDir })], "/tmp");
    expect(await strict("web_fetch", { url: `${w.origin}/pixel.png` })).toMatch(/^Error: refused to fetch 127\.0\.0\.1: it is a loopback address/);
    expect(w.hits).toEqual(["/image.png"]);
    expect(await readdir(mediaDir)).toEqual([]);
  });

  it("says what is wrong with an image the model cannot be shown", async () => {
    const { w, fetch } = await setup();
    expect(await fetch("web_fetch", { url: `${w.origin}/broken.png` })).toMatch(/^Error: .*\/broken\.png says image\/png but is not a PNG, JPEG, GIF or WebP image; the model can be shown only those/);
    expect(await fetch("web_fetch", { url: `${w.origin}/picture.bmp` })).toMatch(/^Error: .*\/picture\.bmp is an image\/bmp image; the model can be shown only PNG, JPEG, GIF and WebP/);
  });

  it("gives no image for a result that only looks like one, names a file outside its media folder, or a file no longer an image", async () => {
    const { w, mediaDir, tool, fetch } = await setup();
    const result = await fetch("web_fetch", { url: `${w.origin}/pixel.png` });
    const outside = join(await tmp(), "x.png");
    await writeFile(outside, PNG_1PX);
    expect(await tool.imageOf!(result.replace(/saved as .*\]$/, `saved as ${outside}]`))).toBeUndefined();
    expect(await tool.imageOf!(`{"text":"(Image fetched from: x)\\n[image/png, 1 bytes, saved as ${outside}]"}`)).toBeUndefined();
    const saved = join(mediaDir, "web", (await readdir(join(mediaDir, "web")))[0]!);
    await writeFile(saved, "now text");
    expect(await tool.imageOf!(result)).toBeUndefined();
  });

  it("saves the same image fetched by several chats at once: every fetch gets it, one file is kept, no temp file is left", async () => {
    const { w, mediaDir, tool, fetch } = await setup();
    const url = `${w.origin}/pixel.png`;
    const results = await Promise.all([1, 2, 3, 4].map(() => fetch("web_fetch", { url })));
    const files = await readdir(join(mediaDir, "web"));
    expect(files).toHaveLength(1);
    const saved = join(mediaDir, "web", files[0]!);
    for (const result of results) {
      expect(result).toBe(`(Image fetched from: ${url})\n[image/png, ${PNG_1PX.length} bytes, saved as ${saved}]`);
      expect(await tool.imageOf!(result)).toBeDefined();
    }
  });

  it("says an image could not be saved without showing the data dir's absolute path", async () => {
    const { w, mediaDir } = await setup();
    // media/ is a file here, so media/web cannot be made.
    const blocked = join(mediaDir, "media");
    await writeFile(blocked, "not a folder");
    const fetch = runner([webFetchTool({ guard: createSsrfGuard(["127.0.0.1"]), timeoutMs: 5_000, mediaDir: blocked })], "/tmp");
    const result = await fetch("web_fetch", { url: `${w.origin}/pixel.png` });
    expect(result).toMatch(/^Error: could not save the image from .*\/pixel\.png under the data dir's media\/web \(ENOTDIR\)/);
    expect(result).not.toContain(mediaDir);
  });
});
