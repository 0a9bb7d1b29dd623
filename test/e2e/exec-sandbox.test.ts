import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import { userInfo } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readSse } from "../../src/server/sse.js";
import { pathWithoutBwrap, pidsWith, requireBwrap, SKIP_BWRAP } from "../helpers/bwrap.js";
import { getJson, startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { startFakeOpenAi, type FakeOpenAi, type FakeStep, type RecordedRequest } from "../fixtures/fake-openai.js";
import { writeConfig } from "../helpers/daemon.js";

const PROVIDER_KEY = "sk-e2e-provider-secret-0123456789";
const SEARCH_KEY = "BSA-e2e-config-secret-0123456789";
const DAEMON_SECRET = "daemon-env-secret-0123456789";

/** A shell expression for `path` that no pattern can read: how a model gets a path past a deny list. */
const hidden = (path: string) => `"$(echo ${Buffer.from(path).toString("base64")} | base64 -d)"`;

/** What the tools answered, in call order, as the model saw them on its next request. */
const toolResults = (req: RecordedRequest | undefined) => (req?.body.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content));

/** Posts a message over the control API and reads its event stream up to the reply. */
async function ask(g: GatewayProcess, sessionKey: string, content: string): Promise<string> {
  const res = await fetch(`${g.url}/api/sessions/${encodeURIComponent(sessionKey)}/messages`, {
    method: "POST",
    headers: { ...g.auth, "content-type": "application/json" },
    body: JSON.stringify({ content }),
  });
  for await (const m of readSse(res.body!)) {
    if (m.event === "reply") return (m.data as { content: string }).content;
  }
  throw new Error(`no reply; gateway output:\n${g.output()}`);
}

describe("exec against a real gateway: the sandbox is the boundary, secrets stay out", () => {
  const tmp = useTempDirs();
  const outside: string[] = [];
  let fake: FakeOpenAi | undefined;
  let gateway: GatewayProcess | undefined;
  afterEach(async () => {
    gateway?.proc.kill("SIGKILL");
    gateway = undefined;
    await fake?.close();
    fake = undefined;
    await Promise.all(outside.splice(0).map((d) => rm(d, { recursive: true, force: true })));
  });

  /** A data dir whose config points at the fake model (its key comes from the daemon's environment), and a home. */
  async function setup(script: FakeStep[], handler?: Parameters<typeof startFakeOpenAi>[1], tools: Record<string, unknown> = {}) {
    fake = await startFakeOpenAi(script, handler);
    const dataDir = await tmp();
    const home = await tmp();
    await writeFile(join(home, ".home-secret"), "in the home");
    await writeConfig(dataDir, {
      agents: { defaults: { provider: "custom", model: "fake-model" } },
      providers: { custom: { apiBase: fake.url } },
      gateway: { port: 0 },
      tools: { web: { search: { apiKey: SEARCH_KEY } }, ...tools },
    });
    const env = { HOME: home, TROUPE_PROVIDERS__CUSTOM__API_KEY: PROVIDER_KEY, FAKE_DAEMON_SECRET: DAEMON_SECRET };
    return { dataDir, home, env };
  }

  const leaks = (text: string, token: string) => [token, PROVIDER_KEY, SEARCH_KEY, DAEMON_SECRET].filter((s) => text.includes(s));

  it.skipIf(SKIP_BWRAP)("the worst exec calls a model can make read no secret and change nothing outside the workspace", async () => {
    requireBwrap();
    const elsewhere = await mkdtemp(join("/var/tmp", "troupe-test-"));
    outside.push(elsewhere);
    await writeFile(join(elsewhere, "victim.txt"), "keep me");
    const marker = `troupe-e2e-${randomUUID()}`;
    let daemonPid = 0;
    const exec = (command: string, timeout?: number) => ({ name: "exec", arguments: { command, ...(timeout ? { timeout } : {}) } });
    const { dataDir, env } = await setup([], (_, i) =>
      i === 0
        ? {
            toolCalls: [
              exec(`cat "$(dirname "$PWD")/gateway.token"`),
              exec(`cat "$(dirname "$PWD")/config.json"`),
              exec(`p=${hidden("/proc")}; for f in "$p/1/environ" "$p/$PPID/environ" "$p/${daemonPid}/environ"; do tr '\\0' '\\n' < "$f"; echo; done`),
              exec(`cd && ls -A; ls -A "$HOME"; echo listed`),
              exec(`python3 -c 'import os; print(open(os.path.join(os.path.dirname(os.getcwd()), "config.json")).read())'`),
              exec(`find ${hidden(elsewhere)} -delete; echo x > ${hidden("/usr/troupe-probe")}`),
              exec(`echo pwned > ${hidden(`${elsewhere}/new.txt`)}; echo pwned > "$(dirname "$PWD")/gateway.token"`),
              exec("echo inside > inside.txt && cat inside.txt"),
              exec(`bash -c 'sleep 60; :' ${marker} & echo started; wait`, 2),
              // An internal service (here the model's own endpoint on loopback) through the only way out,
              // its address hidden from the command guard (which refuses it by name) to reach the proxy.
              exec(`u=${hidden(fake!.url)}; curl -sS -w ' status=%{http_code}' "$u/models"; curl -sS --noproxy '*' "$u/models"; echo " direct=$?"`),
              // Named in the command, it is refused before anything runs.
              exec(`curl -sS ${fake!.url}/models`),
            ],
          }
        : { content: "Done." },
    );
    gateway = await startGateway(dataDir, env);
    daemonPid = gateway.proc.pid!;
    const token = (await readFile(join(dataDir, "gateway.token"), "utf8")).trim();

    expect(await ask(gateway, "api:probe", "do your worst")).toBe("Done.");
    const r = toolResults(fake!.requests[1]);
    expect(r).toHaveLength(11);
    expect(leaks(r.join("\n"), token)).toEqual([]);
    expect(r[0]).toMatch(/gateway\.token: No such file or directory/);
    expect(r[1]).toMatch(/config\.json: No such file or directory/);
    // The environment visible through /proc is the scrubbed one, not the daemon's (bwrap adds the
    // working directory for the egress forwarder it starts).
    const keys = r[2]!.split("\n").filter((l) => /^[A-Za-z_][A-Za-z0-9_]*=/.test(l)).map((l) => l.split("=")[0]!);
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.filter((k) => !["PATH", "HOME", "LANG", "TERM", "PWD"].includes(k))).toEqual([]);
    expect(r[9]).toMatch(/troupe refused to connect to 127\.0\.0\.1: it is a loopback address.*status=403/s);
    expect(r[9]).toMatch(/direct=7/);
    expect(r[10]).toMatch(/^Error: command refused by the safety guard \(internal\/private URL\): it names 127\.0\.0\.1: it is a loopback address/);
    expect(r[3]).not.toContain(".home-secret");
    expect(r[3]).toMatch(/listed\n\nExit code: 0$/);
    expect(r[4]).toMatch(/FileNotFoundError/);
    // Not there at all; the system that is there is read-only.
    expect(r[5]).toMatch(/troupe-test-\w+.: No such file or directory[^]*troupe-probe: Read-only file system/);
    expect(await readFile(join(elsewhere, "victim.txt"), "utf8")).toBe("keep me");
    expect(existsSync(join(elsewhere, "new.txt"))).toBe(false);
    expect((await readFile(join(dataDir, "gateway.token"), "utf8")).trim()).toBe(token);
    expect(r[7]).toBe("inside\n\nExit code: 0");
    expect(await readFile(join(dataDir, "workspace/inside.txt"), "utf8")).toBe("inside\n");
    expect(r[8]).toMatch(/^Error: command timed out after 2s; its process group was killed\.\nOutput so far:\nstarted/);
    await until(() => pidsWith(marker).length === 0, 5_000, "the timed-out command's processes gone");
    // No start-up warning: bwrap is there.
    expect(gateway.output()).not.toMatch(/exec is not isolated|sandbox cannot start/);
  }, 90_000);

  it.skipIf(SKIP_BWRAP)("the sandbox shows only what commands need: no /etc/shadow, /srv, /work or a config file kept elsewhere; common tools work", async () => {
    requireBwrap();
    const cert = "/etc/ssl/certs/ca-certificates.crt";
    for (const host of ["/etc/shadow", "/srv", cert]) expect(existsSync(host), `${host} on this machine`).toBe(true);
    // `--config` naming a file outside the data dir, as `-c /etc/troupe/config.json` does.
    const elsewhere = await mkdtemp(join("/var/tmp", "troupe-test-"));
    outside.push(elsewhere);
    const configFile = join(elsewhere, "config.json");
    const exec = (command: string) => ({ name: "exec", arguments: { command } });
    const { dataDir, env } = await setup([
      {
        toolCalls: [
          exec(`cat ${hidden("/etc/shadow")}`),
          // troupe's own checkout: only its built-in skills and node_modules are shown (read-only).
          exec(`ls -A ${hidden(process.cwd())}; cat ${hidden(join(process.cwd(), "package.json"))}`),
          exec(`ls -d ${hidden("/srv")} ${hidden("/opt")} ${hidden("/var/lib")}`),
          exec(`cat ${hidden(configFile)}`),
          exec(
            "echo x > f.txt && ls -l f.txt | awk '{print $3}' && whoami && printf 'a b\\nc d\\n' | awk '{print $2}' | sed 's/b/B/' | grep -v zzz | tr '\\n' , && echo && " +
              `node -e 'console.log(6 * 7)' && git --version | cut -d' ' -f1-2 && head -n 1 ${hidden(cert)}`,
          ),
        ],
      },
      { content: "Done." },
    ]);
    await rename(join(dataDir, "config.json"), configFile);
    gateway = await startGateway(dataDir, { ...env, TROUPE_CONFIG: configFile });
    expect(await ask(gateway, "api:view", "look around")).toBe("Done.");
    const r = toolResults(fake!.requests[1]);
    expect(r).toHaveLength(5);
    const token = (await readFile(join(dataDir, "gateway.token"), "utf8")).trim();
    expect(leaks(r.join("\n"), token)).toEqual([]);
    expect(r[0]).toMatch(/shadow: No such file or directory/);
    expect(r[1]).toMatch(/package\.json: No such file or directory/);
    expect(r[1]).not.toMatch(/^(package\.json|src|\.git)$/m);
    expect(r[2]).toMatch(/\/srv.: No such file or directory[^]*\/opt.: No such file or directory[^]*\/var\/lib.: No such file or directory/);
    expect(r[3]).toMatch(/config\.json: No such file or directory/);
    const me = userInfo().username;
    expect(r[4]).toBe(`${me}\n${me}\nB,d,\n42\ngit version\n-----BEGIN CERTIFICATE-----\n\nExit code: 0`);
  }, 90_000);

  it('with sandbox "auto" and no bwrap on PATH, exec runs unisolated and the gateway warns once', async () => {
    const { dataDir, env } = await setup([
      { toolCalls: [{ name: "exec", arguments: { command: `cat "$(dirname "$PWD")/gateway.token"` } }] },
      { toolCalls: [{ name: "exec", arguments: { command: "echo second" } }] },
      { content: "Done." },
    ]);
    gateway = await startGateway(dataDir, { ...env, PATH: await pathWithoutBwrap(await tmp()) });
    const token = (await readFile(join(dataDir, "gateway.token"), "utf8")).trim();
    expect(await ask(gateway, "api:x", "go")).toBe("Done.");
    // Not isolated: the token is readable (which is what the warning is about).
    expect(toolResults(fake!.requests[1])[0]).toBe(`${token}\n\nExit code: 0`);
    expect(toolResults(fake!.requests[2])[1]).toBe("second\n\nExit code: 0");
    const warnings = gateway.output().match(/exec is not isolated/g) ?? [];
    expect(warnings).toHaveLength(1);
    expect(gateway.output()).toMatch(/apt-get install bubblewrap.*set tools\.exec\.sandbox to "none"/);
  }, 90_000);

  it('with sandbox "none" exec runs unisolated and nothing is said', async () => {
    const { dataDir, env } = await setup([{ toolCalls: [{ name: "exec", arguments: { command: "echo ran" } }] }, { content: "Done." }], undefined, { exec: { sandbox: "none" } });
    gateway = await startGateway(dataDir, { ...env, PATH: await pathWithoutBwrap(await tmp()) });
    expect(await ask(gateway, "api:x", "go")).toBe("Done.");
    expect(toolResults(fake!.requests[1])[0]).toBe("ran\n\nExit code: 0");
    expect(gateway.output()).not.toMatch(/not isolated|bubblewrap|bwrap/);
  }, 90_000);

  it('with sandbox "bwrap" and no bwrap on PATH, the gateway does not start and says how to fix it', async () => {
    const { dataDir, env } = await setup([], undefined, { exec: { sandbox: "bwrap" } });
    const failure = await startGateway(dataDir, { ...env, PATH: await pathWithoutBwrap(await tmp()) }).then(
      (g) => void (gateway = g),
      (err: Error) => err.message,
    );
    expect(failure).toContain(
      `config error in ${join(dataDir, "config.json")}: tools.exec.sandbox: "bwrap" but bwrap is not on PATH; ` +
        'install bubblewrap (apt-get install bubblewrap; dnf install bubblewrap; pacman -S bubblewrap), or set tools.exec.sandbox to "auto" or "none"\n',
    );
    expect(existsSync(join(dataDir, "store"))).toBe(false);
  }, 60_000);

  it("a provider error that echoes the api key reaches neither the reply nor the stored session", async () => {
    const { dataDir, env } = await setup([
      { status: 401, errorMessage: `Incorrect API key provided: ${PROVIDER_KEY}. You can find your API key at https://platform.openai.com/account/api-keys.` },
    ]);
    gateway = await startGateway(dataDir, env);
    const reply = await ask(gateway, "api:x", "hello");
    expect(reply).toMatch(/^Sorry, I could not finish this: model call to custom failed: HTTP 401 from \S+: check providers\.custom\.apiKey \(Incorrect API key provided: \[REDACTED\]\./);
    expect(reply).not.toContain(PROVIDER_KEY);
    const g = gateway;
    const stored = JSON.stringify(await until(() => getJson<unknown>(g, "/api/sessions/api:x"), 10_000, "the session"));
    expect(stored).toContain("Incorrect API key provided: [REDACTED]");
    expect(stored).not.toContain(PROVIDER_KEY);
    expect(await readFile(join(dataDir, "logs/troupe.log"), "utf8")).not.toContain(PROVIDER_KEY);
  }, 60_000);
});
