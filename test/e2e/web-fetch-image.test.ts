import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PNG_1PX } from "../helpers/documents.js";
import { runCli } from "../helpers/cli.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { answer, startFakeWeb, type FakeWeb } from "../fixtures/fake-web.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { writeConfig } from "../helpers/daemon.js";

/** nanobot's web_fetch answers an image URL with the image (nanobot/agent/tools/web.py, its image/* branch). */
describe("web_fetch on an image URL in a real turn (real process, fake model, fake web)", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let web: FakeWeb | undefined;
  closeAfterEach(() => [fake, web]);

  async function home(model: FakeOpenAi) {
    const dir = await tempDir();
    await writeConfig(dir, {
      agents: { defaults: { provider: "custom", model: "fake-model" } },
      providers: { custom: { apiBase: model.url } },
      tools: { ssrfWhitelist: ["127.0.0.1/32"] },
    });
    return dir;
  }
  const run = (dir: string, url: string) => runCli(["agent", "-m", `what is at ${url}?`], { TROUPE_HOME: dir, TROUPE_PROVIDERS__CUSTOM__API_KEY: "sk-e2e" });

  it("the image reaches the next request as an image part, after the tool result naming where it came from", async () => {
    web = await startFakeWeb({ "/pixel.png": answer("image/png", PNG_1PX) });
    const url = `${web.origin}/pixel.png`;
    fake = await startFakeOpenAi([{ toolCalls: [{ name: "web_fetch", arguments: { url } }] }, { content: "One pixel." }]);
    const dir = await home(fake);
    const r = await run(dir, url);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("One pixel.\n");
    const last = fake.requests[1]!.body.messages;
    const saved = join(dir, "media", "web", (await readdir(join(dir, "media", "web")))[0]!);
    expect(last.filter((m) => m.role === "tool").at(-1)?.content).toBe(`(Image fetched from: ${url})\n[image/png, ${PNG_1PX.length} bytes, saved as ${saved}]`);
    expect(last.at(-1)?.content).toEqual([
      { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_1PX.toString("base64")}` } },
      { type: "text", text: expect.stringMatching(/^\[Image 1 above: the web_fetch result of call /) },
    ]);
  });

  it("a model that refuses images gets the request again with the image named in text, and answers", async () => {
    web = await startFakeWeb({ "/pixel.png": answer("image/png", PNG_1PX) });
    const url = `${web.origin}/pixel.png`;
    fake = await startFakeOpenAi([
      { toolCalls: [{ name: "web_fetch", arguments: { url } }] },
      { status: 400, errorMessage: "this model does not support image input" },
      { content: "I cannot see images." },
    ]);
    const r = await run(await home(fake), url);
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("I cannot see images.\n");
    const body = (i: number) => JSON.stringify(fake!.requests[i]!.body.messages);
    expect(body(1)).toContain('"type":"image_url"');
    expect(body(2)).not.toContain("image_url");
    expect(body(2)).toContain("[Image not delivered to model — do not describe or reference it]");
  });
});
