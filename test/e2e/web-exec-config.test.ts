import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { startFakeWeb, type FakeWeb } from "../fixtures/fake-web.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { writeConfig } from "../helpers/daemon.js";

describe("nanobot's tools.web and tools.exec settings in a real process (fake model, fake search and proxy)", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let web: FakeWeb | undefined;
  closeAfterEach(() => [fake, web]);

  it("search falls back to DuckDuckGo, fetch goes through the proxy, exec keeps to its allow patterns", async () => {
    web = await startFakeWeb({
      "/brave": (_req, res) => res.writeHead(503).end("brave is down"),
      "/ddg": (_req, res) =>
        res.writeHead(200, { "content-type": "text/html" }).end('<div class="result"><a class="result__a" href="https://xstate.js.org/">XState</a><a class="result__snippet">Actors.</a></div>'),
      // As the proxy: web_fetch's request for the page arrives here with its absolute URL.
      "/page": (_req, res) => res.writeHead(200, { "content-type": "text/html" }).end("<html><head><title>Via proxy</title></head><body><p>Hello <b>there</b>.</p></body></html>"),
    });
    fake = await startFakeOpenAi([
      {
        toolCalls: [
          { name: "web_search", arguments: { query: "actor model" } },
          // Port 9 (discard) has no server: only the proxy can answer this.
          { name: "web_fetch", arguments: { url: "http://127.0.0.1:9/page", extractMode: "text" } },
          { name: "exec", arguments: { command: "echo ok && touch evil" } },
          { name: "exec", arguments: { command: "echo ok $(touch evil)" } },
          { name: "exec", arguments: { command: "echo ok" } },
          { name: "exec", arguments: { command: "echo http://169.254.169.254/latest/meta-data/" } },
        ],
      },
      { content: "Done." },
    ]);
    const dir = await tempDir();
    const config = {
      agents: { defaults: { provider: "custom", model: "fake-model" } },
      providers: { custom: { apiBase: fake.url } },
      tools: {
        web: { proxy: web.origin, search: { provider: "brave", apiKey: "brave-key", maxResults: 3 } },
        exec: { allowPatterns: ["echo .*"] },
        ssrfWhitelist: ["127.0.0.1"],
      },
    };
    await writeConfig(dir, config);
    const r = await runCli(["agent", "-m", "look it up"], {
      TROUPE_HOME: dir,
      TROUPE_PROVIDERS__CUSTOM__API_KEY: "sk-e2e",
      TROUPE_TEST_BRAVE_URL: `${web.origin}/brave`,
      TROUPE_TEST_DUCKDUCKGO_URL: `${web.origin}/ddg`,
    });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("Done.\n");

    const results = (fake.requests[1]?.body.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content));
    expect(results[0]).toBe("(Brave search answered 503: brave is down; these come from DuckDuckGo.)\nResults for: actor model\n\n1. XState\n   https://xstate.js.org/\n   Actors.");
    const page = JSON.parse(results[1]!) as { finalUrl: string; text: string; untrusted: boolean };
    expect(page).toMatchObject({ finalUrl: "http://127.0.0.1:9/page", untrusted: true });
    expect(page.text).toMatch(/\n\n# Via proxy\n\nHello there\.$/);
    expect(web.targets).toContain("http://127.0.0.1:9/page");
    expect(results[2]).toMatch(/^Error: command refused by the safety guard: `touch evil` matches none of tools\.exec\.allowPatterns/);
    expect(results[3]).toMatch(/^Error: command refused by the safety guard: `touch evil` matches none/);
    expect(results[4]).toBe("ok\n\nExit code: 0");
    expect(results[5]).toMatch(/^Error: command refused by the safety guard \(internal\/private URL\): it names 169\.254\.169\.254/);
    expect(existsSync(join(dir, "workspace", "evil"))).toBe(false);
  });
});
