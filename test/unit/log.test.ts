import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/logger.js";
import { createRedactor, secretsOf } from "../../src/log/redact.js";
import { defaultConfig } from "../../src/config/index.js";
import { useTempDirs } from "../helpers/tmp.js";

describe("log redaction", () => {
  const tempDir = useTempDirs();

  it("scrubs configured secrets and known key shapes wherever they appear", () => {
    const redact = createRedactor(["my-custom-secret-123"]);
    expect(redact("key my-custom-secret-123 in text")).toBe("key [REDACTED] in text");
    expect(redact("url https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0/getMe")).toBe(
      "url https://api.telegram.org/bot[REDACTED]/getMe",
    );
    expect(redact("Authorization: Bearer abcdefghijklmnop")).toBe("Authorization: Bearer [REDACTED]");
    expect(redact("used sk-or-v1-0123456789abcdef")).toBe("used [REDACTED]");
    expect(redact("nothing secret here")).toBe("nothing secret here");
  });

  it("writes JSON lines to <logs>/troupe.log with secrets redacted", async () => {
    const logsDir = join(await tempDir(), "logs");
    const config = defaultConfig();
    config.providers.custom = { apiKey: "plainkey-98765", apiBase: null, extraHeaders: null };
    config.channels.telegram.token = "tg-token-value";
    config.channels.transcription.apiKey = "whisper-key-value";
    const log = createLogger({ logsDir, secrets: secretsOf(config) });
    log.info({ apiKey: "plainkey-98765", url: "http://x/?k=plainkey-98765" }, "calling with tg-token-value");
    log.warn("transcription refused whisper-key-value");
    log.flush();
    const lines = (await readFile(join(logsDir, "troupe.log"), "utf8")).trim().split("\n");
    const entry = JSON.parse(lines[0] as string) as Record<string, unknown>;
    expect(entry.msg).toBe("calling with [REDACTED]");
    expect(entry.apiKey).toBe("[REDACTED]");
    expect(entry.url).toBe("http://x/?k=[REDACTED]");
    expect(JSON.parse(lines[1] as string)).toMatchObject({ msg: "transcription refused [REDACTED]" });
    expect(lines.join("\n")).not.toMatch(/plainkey-98765|tg-token-value|whisper-key-value/);
  });

  it("counts an MCP server's secret-named env and header values as secrets, not its other settings", () => {
    const config = defaultConfig();
    config.tools.mcpServers.lms = {
      ...config.tools.mcpServers.lms!,
      type: null,
      command: "python",
      args: [],
      cwd: null,
      url: "",
      toolTimeout: 30,
      enabledTools: ["*"],
      env: { LMS_API_KEY: "lms-secret-123", PYTHONPATH: "/srv/lms" },
      headers: { Authorization: "Bearer hdr-secret-456", Accept: "application/json" },
    };
    const secrets = secretsOf(config);
    expect(secrets).toEqual(expect.arrayContaining(["lms-secret-123", "Bearer hdr-secret-456"]));
    expect(secrets).not.toContain("/srv/lms");
    expect(secrets).not.toContain("application/json");
  });

  // nanobot keeps userinfo and credential-named query parameters out of what it logs or forwards
  // (tests/tools/test_mcp_tool.py test_redact_url_strips_credentials_and_query, "https://user:secret@host");
  // troupe scrubs those values, and secret-named extra headers, as it scrubs apiKey.
  it("counts a provider's secret-named extraHeaders and extraQuery values and any URL userinfo as secrets", () => {
    const config = defaultConfig();
    config.providers.custom = {
      apiKey: "APIKEYSECRET99",
      apiBase: "http://u:BASEPASS@127.0.0.1:9/v1",
      extraHeaders: { "x-api-key": "HSECRET123456", "X-Title": "troupe-bot" },
      extraQuery: { key: "QSECRET123456", "api-version": "2024-10-21", sig: "p@ss word!" },
    };
    config.channels.transcription.apiBase = "https://whisper-user:WHISPERPASS@stt.example/v1";
    config.tools.web.proxy = "http://proxyuser:PROXYPASS%40x@proxy.example:3128";
    const secrets = secretsOf(config);
    expect(secrets).toEqual(
      expect.arrayContaining(["HSECRET123456", "QSECRET123456", "BASEPASS", "WHISPERPASS", "whisper-user", "PROXYPASS@x", "PROXYPASS%40x", "proxyuser"]),
    );
    expect(secrets).not.toContain("troupe-bot");
    expect(secrets).not.toContain("2024-10-21");
    // A query value as the endpoint's URL carries it (form-encoded) is caught too.
    const redact = createRedactor(secrets);
    const url = new URL("http://u:BASEPASS@127.0.0.1:9/v1/chat/completions");
    for (const [name, value] of Object.entries(config.providers.custom.extraQuery ?? {})) url.searchParams.set(name, value);
    expect(redact(`connection refused at ${url.toString()}`)).toBe(
      "connection refused at http://u:[REDACTED]@127.0.0.1:9/v1/chat/completions?key=[REDACTED]&api-version=2024-10-21&sig=[REDACTED]",
    );
  });
});
