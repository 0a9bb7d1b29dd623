import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { TROUPE_BIN } from "../helpers/cli.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";

/** Drives `troupe agent` on a real pseudo-terminal (util-linux `script`), typing as a person would. */
describe("troupe agent on a terminal", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  afterEach(async () => fake?.close());

  it("streams replies, Ctrl-C cancels the running turn, Ctrl-D exits", async () => {
    fake = await startFakeOpenAi([], (req) =>
      String(req.body.messages.at(-1)?.content).includes("be slow") ? { content: "too late", delayMs: 20_000 } : { content: "quick answer" },
    );
    const home = await tempDir();
    await writeFile(join(home, "config.json"), JSON.stringify({ agents: { defaults: { provider: "custom", model: "m" } }, providers: { custom: { apiBase: fake.url } } }));
    const child = spawn("script", ["-qfec", `${process.execPath} ${TROUPE_BIN} agent`, "/dev/null"], {
      env: { ...process.env, TROUPE_HOME: home, TERM: "xterm" },
    });
    let screen = "";
    child.stdout.on("data", (d: Buffer) => (screen += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    const waitFor = async (text: string, from = 0) => {
      const deadline = Date.now() + 15_000;
      while (!screen.slice(from).includes(text)) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${JSON.stringify(text)}; screen: ${JSON.stringify(screen)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return screen.indexOf(text, from) + text.length;
    };
    try {
      let at = await waitFor("you> ");
      child.stdin.write("be slow\r");
      const asked = Date.now();
      while (fake.requests.length < 1) {
        if (Date.now() - asked > 15_000) throw new Error(`the model was never called; screen: ${JSON.stringify(screen)}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      child.stdin.write("\x03");
      at = await waitFor("Stopped.", at);
      child.stdin.write("hello\r");
      await waitFor("quick answer", at);
      child.stdin.write("\x04");
      const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r("still running"), 10_000))]);
      expect(code, `screen: ${JSON.stringify(screen)}`).toBe(0);
      expect(screen).not.toContain("too late");
    } finally {
      child.kill("SIGKILL");
    }
  });
});
