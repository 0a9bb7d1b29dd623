import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { makePdf, PNG_1PX } from "../helpers/documents.js";
import { runCli } from "../helpers/cli.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { writeConfig } from "../helpers/daemon.js";

describe("read_file on documents and images in a real turn (real process, fake model)", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  closeAfterEach(() => [fake]);

  it("a PDF's text reaches the next request; a PNG reaches the one after as an image part", async () => {
    fake = await startFakeOpenAi([
      { toolCalls: [{ name: "read_file", arguments: { path: "docs/report.pdf", pages: "2-3" } }] },
      { toolCalls: [{ name: "read_file", arguments: { path: "docs/pixel.png" } }] },
      { content: "A report and one pixel." },
    ]);
    const dir = await tempDir();
    await mkdir(join(dir, "workspace/docs"), { recursive: true });
    await writeFile(join(dir, "workspace/docs/report.pdf"), makePdf(["Cover page", "Revenue grew 12%", "Costs fell", "Appendix"]));
    await writeFile(join(dir, "workspace/docs/pixel.png"), PNG_1PX);
    await writeConfig(dir, { agents: { defaults: { provider: "custom", model: "fake-model" } }, providers: { custom: { apiBase: fake.url } } });

    const r = await runCli(["agent", "-m", "summarise docs/report.pdf and look at docs/pixel.png"], { TROUPE_HOME: dir, TROUPE_PROVIDERS__CUSTOM__API_KEY: "sk-e2e" });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("A report and one pixel.\n");
    expect(fake.requests).toHaveLength(3);

    const messages = (i: number) => fake!.requests[i]!.body.messages;
    const imageParts = (i: number) =>
      messages(i).flatMap((m) => (Array.isArray(m.content) ? (m.content as Array<{ type: string; image_url?: { url: string } }>) : [])).filter((p) => p.type === "image_url");

    const pdfResult = messages(1).find((m) => m.role === "tool");
    expect(pdfResult?.content).toBe("--- Page 2 ---\nRevenue grew 12%\n\n--- Page 3 ---\nCosts fell");
    expect(imageParts(1)).toEqual([]);

    const last = messages(2);
    const pngResult = last.filter((m) => m.role === "tool").at(-1);
    expect(pngResult?.content).toBe(`(Image file: docs/pixel.png [image/png, ${PNG_1PX.length} bytes])`);
    // The image follows the tool results, in a user message (tool messages hold text only on most servers).
    expect(last.at(-1)?.role).toBe("user");
    expect(imageParts(2)).toEqual([{ type: "image_url", image_url: { url: `data:image/png;base64,${PNG_1PX.toString("base64")}` } }]);
  });

  it("a model that refuses images gets the request again with the image named in text, and answers", async () => {
    fake = await startFakeOpenAi([
      { toolCalls: [{ name: "read_file", arguments: { path: "pixel.png" } }] },
      { status: 400, errorMessage: "this model does not support image input" },
      { content: "I cannot see images." },
    ]);
    const dir = await tempDir();
    await mkdir(join(dir, "workspace"), { recursive: true });
    await writeFile(join(dir, "workspace/pixel.png"), PNG_1PX);
    await writeConfig(dir, { agents: { defaults: { provider: "custom", model: "fake-model" } }, providers: { custom: { apiBase: fake.url } } });
    const r = await runCli(["agent", "-m", "look at pixel.png"], { TROUPE_HOME: dir, TROUPE_PROVIDERS__CUSTOM__API_KEY: "sk-e2e" });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("I cannot see images.\n");
    expect(fake.requests).toHaveLength(3);
    const body = (i: number) => JSON.stringify(fake!.requests[i]!.body.messages);
    expect(body(1)).toContain('"type":"image_url"');
    expect(body(2)).not.toContain("image_url");
    expect(body(2)).toContain("[Image not delivered to model — do not describe or reference it]");
  });
});
