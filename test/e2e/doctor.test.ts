import { createServer as createHttpsServer } from "node:https";
import { createServer, type Server } from "node:net";
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { startFakeTelegram, type FakeTelegram } from "../fixtures/fake-telegram.js";
import { runCli } from "../helpers/cli.js";
import { openStore } from "../../src/store/store.js";
import { telegramOn, writeHome, writeConfig } from "../helpers/daemon.js";
import { startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { closedPort } from "../helpers/ports.js";
import { selfSignedCert } from "../helpers/tls.js";

const TOKEN = "123:DOCTOR";
const COMPLETION = JSON.stringify({ id: "c", object: "chat.completion", choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: "secure" } }], usage: { prompt_tokens: 1, completion_tokens: 1 } });
const CHUNK = JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, finish_reason: "stop", delta: { content: "secure" } }] });
/** What a certificate this machine does not trust is said with (src/net-errors.ts). */
const TRUST_IT = "if you trust it, give its CA certificate (a PEM file) in NODE_EXTRA_CA_CERTS, or add it to the system store and set NODE_OPTIONS=--use-openssl-ca";

/** A TCP server on a free loopback port (a stranger holding the gateway's port, or just a port to free again). */
async function holdPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { port: (server.address() as { port: number }).port, server };
}

/** The files under `dir` (relative paths) whose bytes hold `text`. */
async function filesContaining(dir: string, text: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const hits: string[] = [];
  for (const e of entries.filter((f) => f.isFile())) {
    const path = join(e.parentPath, e.name);
    if ((await readFile(path)).includes(text)) hits.push(relative(dir, path));
  }
  return hits.sort();
}

/** The doctor's line for a check: "ok", "FAIL" or "skip", the check's name, what it found. */
const line = (out: string, check: string) => out.split("\n").find((l) => new RegExp(`^(ok|warn|FAIL|skip) +${check}:`).test(l));

describe("troupe doctor", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let tg: FakeTelegram | undefined;
  let gateway: GatewayProcess | undefined;
  let stranger: Server | undefined;
  closeAfterEach(() => [gateway, stranger, fake, tg]);

  it("all well: config, provider (one tiny request), port, Telegram getMe, store and disk are ok; exit 0", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "p" }));
    tg = await startFakeTelegram(TOKEN);
    const home = await tmp();
    const port = await closedPort();
    await writeHome(home, fake.url, { config: { gateway: { port }, channels: { telegram: telegramOn(tg) } } });
    const r = await runCli(["doctor"], { TROUPE_HOME: home });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(line(r.stdout, "config")).toMatch(/^ok +config: .*config\.json/);
    expect(line(r.stdout, "provider")).toMatch(new RegExp(`^ok +provider: custom at ${fake.url.replace(/[/.]/g, "\\$&")} answered \\(model fake-model\\)`));
    expect(line(r.stdout, "gateway")).toMatch(new RegExp(`^ok +gateway: port ${port} on 127\\.0\\.0\\.1 is free`));
    expect(line(r.stdout, "telegram")).toMatch(/^ok +telegram: token accepted \(@troupe_bot\)/);
    expect(line(r.stdout, "store")).toMatch(/^ok +store: /);
    expect(line(r.stdout, "disk")).toMatch(/^ok +disk: .* free under /);
    expect(r.stdout).not.toContain("FAIL");
    // One tiny model call, no more.
    expect(fake.requests).toHaveLength(1);
    expect((fake.requests[0]!.body as unknown as { max_tokens: number }).max_tokens).toBe(1);
    expect(tg.calls.map((c) => c.method)).toEqual(["getMe"]);
  });

  it("each failure is one FAIL line with the fix, the other checks still run, and the exit code is 1", async () => {
    fake = await startFakeOpenAi([{ status: 401 }]);
    tg = await startFakeTelegram("999:OTHER");
    const held = await holdPort();
    stranger = held.server;
    const home = await tmp();
    await writeHome(home, fake.url, { config: { gateway: { port: held.port }, channels: { telegram: { enabled: true, token: TOKEN, apiRoot: tg.apiRoot, allowFrom: ["*"] } } } });
    const r = await runCli(["doctor"], { TROUPE_HOME: home });
    expect(r.code).toBe(1);
    expect(line(r.stdout, "config")).toMatch(/^ok/);
    expect(line(r.stdout, "provider")).toMatch(new RegExp(`^FAIL +provider: HTTP 401 from ${fake.url.replace(/[/.]/g, "\\$&")}.*: check providers\\.custom\\.apiKey`));
    expect(line(r.stdout, "gateway")).toMatch(new RegExp(`^FAIL +gateway: port ${held.port} on 127\\.0\\.0\\.1 is in use by another program.*gateway\\.port`));
    expect(line(r.stdout, "telegram")).toMatch(/^FAIL +telegram: token rejected \(401\).*channels\.telegram\.token/);
    expect(line(r.stdout, "store")).toMatch(/^ok/);
    expect(line(r.stdout, "disk")).toMatch(/^ok/);
  });

  it("an unreachable Telegram API is named without the bot token, which its error's URL holds", async () => {
    fake = await startFakeOpenAi([{ content: "pong" }]);
    const home = await tmp();
    const token = "1000000001:AAsecretsecretsecretsecret";
    const apiRoot = `http://127.0.0.1:${await closedPort()}`;
    await writeHome(home, fake.url, { config: { gateway: { port: await closedPort() }, channels: { telegram: { enabled: true, token, apiRoot, allowFrom: ["*"] } } } });
    const r = await runCli(["doctor"], { TROUPE_HOME: home });
    expect(line(r.stdout, "telegram")).toMatch(new RegExp(`^FAIL +telegram: cannot reach ${apiRoot.replace(/[/.]/g, "\\$&")}`));
    expect(r.stdout + r.stderr).not.toContain("AAsecretsecret");
  });

  it("an unreachable provider and an invalid config are named, with what to do", async () => {
    const home = await tmp();
    const closed = await closedPort();
    await writeConfig(home, { agents: { defaults: { provider: "custom", model: "m" } }, providers: { custom: { apiBase: `http://127.0.0.1:${closed}/v1` } }, gateway: { port: 0 } });
    const down = await runCli(["doctor"], { TROUPE_HOME: home });
    expect(down.code).toBe(1);
    expect(line(down.stdout, "provider")).toMatch(new RegExp(`^FAIL +provider: connection refused at http://127\\.0\\.0\\.1:${closed}/v1: .*providers\\.custom\\.apiBase`));
    expect(line(down.stdout, "gateway")).toMatch(/^ok +gateway: port 0/);
    expect(line(down.stdout, "telegram")).toMatch(/^skip +telegram: not enabled/);

    await writeConfig(home, { gateway: { port: -1 } });
    const bad = await runCli(["doctor"], { TROUPE_HOME: home });
    expect(bad.code).toBe(1);
    expect(line(bad.stdout, "config")).toMatch(/^FAIL +config: .*gateway\.port: /);
    expect(line(bad.stdout, "provider")).toMatch(/^skip +provider: needs a valid config/);
    expect(line(bad.stdout, "store")).toMatch(/^ok/);
    expect(line(bad.stdout, "disk")).toMatch(/^ok/);
  });

  it("names the environment variable that set the provider's apiBase or apiKey, never the key's value", async () => {
    // nanobot's status names the variable behind a provider's key and never shows the secret
    // (tests/cli/test_config_diagnostics.py: test_status_reports_missing_env_var_at_field, test_status_reports_field_without_exposing_secret).
    fake = await startFakeOpenAi([{ status: 401 }]);
    const home = await tmp();
    const fileBase = `http://127.0.0.1:${await closedPort()}/v1`;
    await writeConfig(home, { agents: { defaults: { provider: "custom", model: "m" } }, providers: { custom: { apiBase: fileBase, apiKey: "sk-from-file" } }, gateway: { port: 0 } });
    const secret = "sk-env-secret-4711";
    const env = { TROUPE_HOME: home, TROUPE_PROVIDERS__CUSTOM__API_BASE: fake.url, NANOBOT_PROVIDERS__CUSTOM__API_KEY: secret };
    const r = await runCli(["doctor"], env);
    expect(r.code).toBe(1);
    const provider = line(r.stdout, "provider") ?? "";
    expect(provider).toMatch(/^FAIL +provider: HTTP 401 /);
    expect(provider).toContain("apiBase from TROUPE_PROVIDERS__CUSTOM__API_BASE");
    expect(provider).toContain("apiKey from NANOBOT_PROVIDERS__CUSTOM__API_KEY");
    // The fix points at the variable, not at the file's value it replaced.
    expect(provider).toMatch(/: check NANOBOT_PROVIDERS__CUSTOM__API_KEY \(it overrides providers\.custom\.apiKey/);
    expect(r.stdout + r.stderr).not.toContain(secret);
    expect(fake.requests[0]?.headers.authorization).toBe(`Bearer ${secret}`);

    // A key the file takes from a variable (${VAR}) is named too; an unreachable overridden apiBase names its variable in the fix.
    await writeConfig(home, { agents: { defaults: { provider: "custom", model: "m" } }, providers: { custom: { apiBase: fake.url, apiKey: "${MY_MODEL_KEY}" } }, gateway: { port: 0 } });
    const down = await runCli(["doctor"], { TROUPE_HOME: home, MY_MODEL_KEY: secret, TROUPE_PROVIDERS__CUSTOM__API_BASE: fileBase });
    const downLine = line(down.stdout, "provider") ?? "";
    expect(downLine).toMatch(/^FAIL +provider: connection refused at /);
    expect(downLine).toContain("apiKey from ${MY_MODEL_KEY} in config.json");
    expect(downLine).toMatch(/: is the server up\? check TROUPE_PROVIDERS__CUSTOM__API_BASE \(it overrides providers\.custom\.apiBase/);
    expect(down.stdout + down.stderr).not.toContain(secret);
  });

  it("never prints a provider's extraQuery or extraHeaders credential, or an apiBase's password, in doctor, the reply or the data dir", async () => {
    // nanobot keeps URL userinfo and credential query values out of what it logs
    // (tests/tools/test_mcp_tool.py test_redact_url_strips_credentials_and_query: "https://user:secret@host...").
    fake = await startFakeOpenAi([{ status: 401 }, { status: 401, errorMessage: "Invalid API key HSECRET123456 for key=QSECRET123456" }]);
    const home = await tmp();
    const providers = { custom: { apiBase: fake.url, apiKey: "APIKEYSECRET99", extraQuery: { key: "QSECRET123456" }, extraHeaders: { "x-api-key": "HSECRET123456" } } };
    await writeConfig(home, { agents: { defaults: { provider: "custom", model: "m" } }, providers, gateway: { port: 0 } });
    const doc = await runCli(["doctor"], { TROUPE_HOME: home });
    expect(line(doc.stdout, "provider")).toMatch(/^FAIL +provider: HTTP 401 from http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions\?key=\[REDACTED\]/);
    expect(fake.requests[0]?.url).toContain("key=QSECRET123456");
    const agent = await runCli(["agent", "-m", "hi"], { TROUPE_HOME: home });
    expect(agent.stdout + agent.stderr).toContain("HTTP 401");
    expect(doc.stdout + doc.stderr + agent.stdout + agent.stderr).not.toContain("SECRET123456");
    expect(await filesContaining(home, "SECRET123456")).toEqual(["config.json"]);

    const base = `http://u:BASEPASS@127.0.0.1:${await closedPort()}/v1`;
    const down = await runCli(["doctor"], { TROUPE_HOME: home, TROUPE_PROVIDERS__CUSTOM__API_BASE: base });
    expect(line(down.stdout, "provider")).toMatch(/^FAIL +provider: connection refused at http:\/\/u:\[REDACTED\]@127\.0\.0\.1/);
    expect(down.stdout + down.stderr).not.toContain("BASEPASS");
  });

  it("a corrupt record in the store fails the store check, naming it (listings skip it, the doctor does not)", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "p" }));
    const home = await tmp();
    await writeHome(home, fake.url, { config: { gateway: { port: await closedPort() } } });
    const store = await openStore(join(home, "store"));
    await store.batch([{ type: "put", sublevel: "sessions", key: "meta:api:x", value: { key: 42 } }], { sync: true });
    await store.close();
    const r = await runCli(["doctor"], { TROUPE_HOME: home });
    expect(r.code).toBe(1);
    expect(line(r.stdout, "store")).toMatch(/^FAIL +store: .*: 1 corrupt record\(s\), the first sessions\/"meta:api:x": /);
    expect(r.stdout).toContain("troupe sessions delete KEY");
    expect(line(r.stdout, "provider")).toMatch(/^ok/);
  });

  it("with the daemon running: its port and its store are ok, held by it", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "p" }));
    const home = await tmp();
    const port = await closedPort();
    await writeHome(home, fake.url, { config: { gateway: { port } } });
    gateway = await startGateway(home);
    const pid = gateway.proc.pid!;
    const r = await runCli(["doctor"], { TROUPE_HOME: home });
    expect(r.stdout).not.toContain("FAIL");
    expect(r.code).toBe(0);
    expect(line(r.stdout, "gateway")).toMatch(new RegExp(`^ok +gateway: port ${port} on 127\\.0\\.0\\.1 is held by the troupe daemon \\(pid ${pid}\\)`));
    expect(line(r.stdout, "store")).toMatch(new RegExp(`^ok +store: .* held by the running daemon \\(pid ${pid}\\)`));
  });

  it("a control API open to the network and exec unrestricted are warnings with the fix (exit 0); status remarks on the host", async () => {
    // A nanobot user's config (gateway.host "0.0.0.0", restrictToWorkspace false, nanobot's default): nanobot
    // itself refuses a wildcard API host without a key (test_api_config_requires_key_for_wildcard_hosts).
    fake = await startFakeOpenAi([], () => ({ content: "p" }));
    const home = await tmp();
    const port = await closedPort();
    await writeHome(home, fake.url, { config: { gateway: { host: "0.0.0.0", port }, tools: { restrictToWorkspace: false } } });
    const r = await runCli(["doctor"], { TROUPE_HOME: home });
    expect(r.code).toBe(0);
    expect(line(r.stdout, "gateway")).toMatch(new RegExp(`^warn +gateway: port ${port} on 0\\.0\\.0\\.0 is free; gateway\\.host is 0\\.0\\.0\\.0, not a loopback address: the control API is reachable from other machines .*: set gateway\\.host to 127\\.0\\.0\\.1 unless you mean that$`));
    expect(line(r.stdout, "exec")).toMatch(/^warn +exec: not isolated: tools\.restrictToWorkspace is false, .*: set tools\.restrictToWorkspace to true/);
    expect(r.stdout).toMatch(/no check failed; 2 warnings/);
    const status = await runCli(["status"], { TROUPE_HOME: home });
    expect(status.stdout).toContain(`gateway:   0.0.0.0:${port} (not a loopback address: reachable from other machines; set gateway.host to 127.0.0.1 unless you mean that)`);
    await writeHome(home, fake.url, { config: { gateway: { port } } });
    expect((await runCli(["status"], { TROUPE_HOME: home })).stdout).toMatch(new RegExp(`gateway: +127\\.0\\.0\\.1:${port}\n`));
  });

  it("a self-signed https provider is up: doctor names the certificate and how to trust it, agent tries once; NODE_EXTRA_CA_CERTS makes both work", async () => {
    const dir = await tmp();
    const { key, cert, certFile } = await selfSignedCert(dir);
    let connections = 0;
    // Answers as the fake model does, over https: SSE when asked to stream (a turn), JSON when not (doctor's ping).
    const server = createHttpsServer({ key, cert }, (req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        if (!(JSON.parse(body) as { stream?: boolean }).stream) return res.writeHead(200, { "content-type": "application/json" }).end(COMPLETION);
        res.writeHead(200, { "content-type": "text/event-stream" }).end(`data: ${CHUNK}\n\ndata: [DONE]\n\n`);
      });
    });
    server.on("connection", () => connections++);
    stranger = server;
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `https://127.0.0.1:${(server.address() as { port: number }).port}/v1`;
    const home = await tmp();
    await writeHome(home, url, { config: { gateway: { port: 0 } } });
    const r = await runCli(["doctor"], { TROUPE_HOME: home });
    const provider = line(r.stdout, "provider") ?? "";
    expect(provider).toBe(`FAIL  provider: ${url} is up, but its TLS certificate is not trusted here (self-signed certificate): ${TRUST_IT}`);
    const agent = await runCli(["agent", "-m", "hi"], { TROUPE_HOME: home });
    expect(agent.stdout + agent.stderr).toContain(`model call to custom failed: ${url} is up, but its TLS certificate is not trusted here (self-signed certificate): ${TRUST_IT}`);
    expect(connections).toBe(2);

    const trusted = { TROUPE_HOME: home, NODE_EXTRA_CA_CERTS: certFile };
    expect(line((await runCli(["doctor"], trusted)).stdout, "provider")).toMatch(new RegExp(`^ok +provider: custom at ${url.replace(/[/.]/g, "\\$&")} answered`));
    expect((await runCli(["agent", "-m", "hi"], trusted)).stdout).toContain("secure");
  });
});
