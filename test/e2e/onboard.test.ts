import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readFile, readdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { runCli, TROUPE_BIN } from "../helpers/cli.js";
import { useTempDirs } from "../helpers/tmp.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { spawnPty, type PtySession } from "../helpers/pty.js";

/** Runs `troupe onboard` on a real pseudo-terminal (util-linux `script`) and answers its questions as a person would. */
function onTerminal(home: string) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("TROUPE_")));
  const child = spawn("script", ["-qfec", `${process.execPath} ${TROUPE_BIN} onboard`, "/dev/null"], { env: { ...clean, TROUPE_HOME: home, TERM: "xterm" } });
  let screen = "";
  child.stdout.on("data", (d: Buffer) => (screen += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  let at = 0;
  const answer = async (prompt: string, text: string) => {
    const deadline = Date.now() + 30_000;
    while (!screen.slice(at).includes(prompt)) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${JSON.stringify(prompt)}; screen: ${JSON.stringify(screen)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    at = screen.indexOf(prompt, at) + prompt.length;
    child.stdin.write(`${text}\r`);
  };
  return { child, exited, answer, screen: () => screen };
}

describe("troupe onboard on a terminal", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  closeAfterEach(() => [fake]);

  it("asks for the provider, its endpoint, the key (not echoed) and the model, writes them (mode 600), and the first message works", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "Hello, I am set up." }));
    const home = await tempDir();
    const t = onTerminal(home);
    try {
      await t.answer("Provider", "custom");
      await t.answer("API base URL", fake.url);
      await t.answer("API key", "sk-typed-secret-77");
      await t.answer("Model", "fake-model");
      const code = await Promise.race([t.exited, new Promise((r) => setTimeout(() => r("still running"), 30_000))]);
      expect(code, t.screen()).toBe(0);
    } finally {
      t.child.kill("SIGKILL");
    }
    expect(t.screen()).not.toContain("sk-typed-secret-77");
    expect(t.screen()).toContain(`wrote ${join(home, "config.json")}`);
    const file = join(home, "config.json");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const config = JSON.parse(await readFile(file, "utf8")) as { agents: { defaults: { provider: string; model: string } }; providers: Record<string, { apiKey: string; apiBase: string }> };
    expect(config.agents.defaults).toMatchObject({ provider: "custom", model: "fake-model" });
    expect(config.providers.custom).toMatchObject({ apiKey: "sk-typed-secret-77", apiBase: fake.url });

    const first = await runCli(["agent", "-m", "hello"], { TROUPE_HOME: home });
    expect(first.stderr).toBe("");
    expect(first.stdout).toContain("Hello, I am set up.");
    expect(fake.requests[0]?.headers.authorization).toBe("Bearer sk-typed-secret-77");
  });

  it("keeps a config that already names a usable provider, asking nothing", async () => {
    const home = await tempDir();
    expect((await runCli(["onboard"], { TROUPE_HOME: home, TROUPE_PROVIDERS__OPENAI__API_KEY: "sk-env" })).code).toBe(0);
    const before = await readFile(join(home, "config.json"), "utf8");
    // The key is given by the environment here, so the provider is usable and onboard does not ask.
    const again = spawn("script", ["-qfec", `${process.execPath} ${TROUPE_BIN} onboard`, "/dev/null"], {
      env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("TROUPE_"))), TROUPE_HOME: home, TERM: "xterm", TROUPE_PROVIDERS__OPENAI__API_KEY: "sk-env" },
    });
    let screen = "";
    again.stdout.on("data", (d: Buffer) => (screen += d.toString()));
    const code = await Promise.race([new Promise((r) => again.on("exit", r)), new Promise((r) => setTimeout(() => r("still running"), 30_000))]);
    again.kill("SIGKILL");
    expect(code, screen).toBe(0);
    expect(screen).not.toContain("Provider");
    expect(screen).toContain(`kept ${join(home, "config.json")}`);
    expect(await readFile(join(home, "config.json"), "utf8")).toBe(before);
  });

  describe("stopped at a question", () => {
    let pty: PtySession | undefined;
    closeAfterEach(() => [pty]);

    // nanobot's wizard, left without saving, keeps the config as it was and says nothing was saved
    // (tests/agent/test_onboard_logic.py: test_main_menu_interrupt_can_discard_unsaved_session_changes).
    it("Ctrl-C at the first question leaves no data dir behind and says on stderr that nothing was set up", async () => {
      const dir = await tempDir();
      const home = join(dir, "home");
      const errFile = join(dir, "stderr");
      pty = spawnPty(`onboard 2>${errFile}`, { TROUPE_HOME: home });
      await pty.waitFor("Provider [");
      pty.type("\x03");
      expect(await pty.exited, pty.screen()).toBe(130);
      expect(existsSync(home)).toBe(false);
      const stderr = await readFile(errFile, "utf8");
      expect(stderr).toContain("onboard stopped: nothing was set up");
      expect(stderr).toContain("run troupe onboard again");
      // The next run asks again, from the start.
      expect((await runCli(["status"], { TROUPE_HOME: home })).stdout).toContain("(missing: run `troupe onboard`)");
    });

    it("Ctrl-D at the key question keeps a data dir that was there, as it was", async () => {
      const dir = await tempDir();
      const home = join(dir, "home");
      await mkdir(home, { mode: 0o750 });
      await writeFile(join(home, "notes.txt"), "mine\n");
      const errFile = join(dir, "stderr");
      pty = spawnPty(`onboard 2>${errFile}`, { TROUPE_HOME: home });
      await pty.waitFor("Provider [");
      pty.type("openai\r");
      await pty.waitFor("API key");
      pty.type("\x04");
      expect(await pty.exited, pty.screen()).toBe(130);
      expect(await readdir(home)).toEqual(["notes.txt"]);
      expect((await stat(home)).mode & 0o777).toBe(0o750);
      expect(await readFile(errFile, "utf8")).toContain("nothing was set up");
    });
  });
});
