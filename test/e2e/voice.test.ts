import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readSse } from "../../src/server/sse.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { startFakeWeb, type FakeWeb } from "../fixtures/fake-web.js";
import { runCli } from "../helpers/cli.js";
import { startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { writeConfig } from "../helpers/daemon.js";

/** POSTs a message to the gateway and reads its event stream to the reply (or returns the error answer). */
async function post(g: GatewayProcess, key: string, body: unknown): Promise<{ status: number; reply?: string; error?: string }> {
  const res = await fetch(`${g.url}/api/sessions/${encodeURIComponent(key)}/messages`, { method: "POST", headers: { ...g.auth, "content-type": "application/json" }, body: JSON.stringify(body) });
  if (res.status !== 200) return { status: res.status, error: ((await res.json()) as { error: string }).error };
  for await (const m of readSse(res.body!)) if (m.event === "reply") return { status: 200, reply: (m.data as { content: string }).content };
  return { status: 200 };
}

describe("voice on every channel: an audio file posted to the control API is transcribed (real gateway, fake endpoints)", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let speech: FakeWeb | undefined;
  let g: GatewayProcess | undefined;
  closeAfterEach(() => [g, fake, speech]);

  it("sends the file to channels.transcriptionProvider's endpoint with its key, model and language; the model reads the text; a bad file is a 400; an endpoint that fails leaves the file", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "Noted." }));
    const uploads: Array<{ auth: string | undefined; body: string }> = [];
    let failing = false;
    speech = await startFakeWeb({
      "/v1/audio/transcriptions": (req, res) => {
        let body = "";
        req.on("data", (c: Buffer) => (body += c.toString("latin1")));
        req.on("end", () => {
          uploads.push({ auth: req.headers.authorization, body });
          if (failing) return void res.writeHead(503, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "overloaded" } }));
          res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ text: " buy milk tomorrow " }));
        });
      },
    });
    const home = await tempDir();
    await writeConfig(home, {
      agents: { defaults: { provider: "custom", model: "fake-model" } },
      providers: { custom: { apiBase: fake.url, apiKey: "k" }, openai: { apiKey: "sk-voice", apiBase: `${speech.origin}/v1` } },
      channels: { transcriptionProvider: "openai", transcriptionLanguage: "en" },
      gateway: { port: 0 },
    });
    const status = await runCli(["status"], { TROUPE_HOME: home });
    expect(status.stdout).toMatch(new RegExp(`^voice: +transcribed by openai at ${speech.origin.replace(/[/.]/g, "\\$&")}/v1 \\(model whisper-1\\)$`, "m"));
    expect(status.stdout).not.toContain("sk-voice");
    g = await startGateway(home);

    const voice = Buffer.from("OGGVOICE-BYTES").toString("base64");
    const first = await post(g, "api:voice", { media: [{ name: "note.ogg", type: "audio/ogg", data: voice }] });
    expect(first).toEqual({ status: 200, reply: "Noted." });
    expect(uploads).toHaveLength(1);
    expect(uploads[0]!.auth).toBe("Bearer sk-voice");
    expect(uploads[0]!.body).toContain("OGGVOICE-BYTES");
    expect(uploads[0]!.body).toMatch(/name="model"\r\n\r\nwhisper-1\r\n/);
    expect(uploads[0]!.body).toMatch(/name="language"\r\n\r\nen\r\n/);
    const said = String(fake.requests.at(-1)?.body.messages.at(-1)?.content);
    expect(said).toMatch(new RegExp(`\\n\\n\\[audio note\\.ogg: ${join(home, "media", "api").replace(/[/.]/g, "\\$&")}/[0-9a-f]{16}\\.ogg\\]\\n\\[transcription: buy milk tomorrow\\]$`));

    const bad = await post(g, "api:voice", { content: "listen", media: [{ name: "x.ogg", data: "%%%" }] });
    expect(bad).toEqual({ status: 400, error: "media[0]: data is not base64" });
    expect(await post(g, "api:voice", { content: "", media: [] })).toEqual({ status: 400, error: "body: content must not be empty (or send media)" });

    failing = true;
    const requests = fake.requests.length;
    const second = await post(g, "api:voice", { content: "and this one?", media: [{ data: `data:audio/mpeg;base64,${Buffer.from("MP3").toString("base64")}` }] });
    expect(second).toEqual({ status: 200, reply: "Noted." });
    expect(fake.requests.length).toBe(requests + 1);
    const kept = String(fake.requests.at(-1)?.body.messages.at(-1)?.content);
    expect(kept).toMatch(/\n\nand this one\?\n\[audio: .+\.mp3\]$/);
    expect(uploads.length).toBeGreaterThanOrEqual(2);
    // The log says where and why (the gateway's log file, under the data dir).
    const line = await until(
      async () => {
        const files = await readdir(join(home, "logs"));
        const text = (await Promise.all(files.map((f) => readFile(join(home, "logs", f), "utf8")))).join("\n");
        return text.split("\n").find((l) => l.includes("voice transcription failed at"));
      },
      20_000,
      "the failed transcription's log line",
    );
    expect(JSON.parse(line).msg).toMatch(new RegExp(`^voice transcription failed at ${speech.origin.replace(/[/.]/g, "\\$&")}/v1/audio/transcriptions: HTTP 503: .*overloaded.*; passing the file instead$`));
  });
});
