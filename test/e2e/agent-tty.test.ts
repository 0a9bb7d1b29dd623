import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { TROUPE_BIN } from "../helpers/cli.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { writeConfig } from "../helpers/daemon.js";

/** Drives `troupe agent` on a real pseudo-terminal (util-linux `script`), typing as a person would. */
describe("troupe agent on a terminal", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  closeAfterEach(() => [fake]);

  it("streams replies, Ctrl-C cancels the running turn, Ctrl-D exits", async () => {
    fake = await startFakeOpenAi([], (req) =>
      String(req.body.messages.at(-1)?.content).includes("be slow") ? { content: "too late", delayMs: 20_000 } : { content: "quick answer" },
    );
    const home = await tempDir();
    await writeConfig(home, { agents: { defaults: { provider: "custom", model: "m" } }, providers: { custom: { apiBase: fake.url } } });
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

  it("answers commands and an idle /stop, gives each model call's text its own paragraph, renders Markdown, and keeps line history across chats", async () => {
    fake = await startFakeOpenAi([], (req) => {
      if (req.body.messages.at(-1)?.role === "tool") return { content: "# Found\n\nIt is **bold** and `code`." };
      return { content: "Let me look.", toolCalls: [{ name: "exec", arguments: { command: "echo hi" } }] };
    });
    const home = await tempDir();
    await writeConfig(home, { agents: { defaults: { provider: "custom", model: "m" } }, providers: { custom: { apiBase: fake.url } } });

    /** One chat on a 100-column pseudo-terminal. */
    const chat = async (args: string, type: (send: (keys: string) => void, waitFor: (text: string) => Promise<void>) => Promise<void>) => {
      const child = spawn("script", ["-qfec", `stty cols 100 rows 40; ${process.execPath} ${TROUPE_BIN} agent ${args}`, "/dev/null"], { env: { ...process.env, TROUPE_HOME: home, TERM: "xterm" } });
      let screen = "";
      let from = 0;
      child.stdout.on("data", (d: Buffer) => (screen += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
      const waitFor = async (text: string) => {
        const deadline = Date.now() + 30_000;
        while (!screen.slice(from).includes(text)) {
          if (Date.now() > deadline) throw new Error(`timed out waiting for ${JSON.stringify(text)}; screen: ${JSON.stringify(screen)}`);
          await new Promise((r) => setTimeout(r, 50));
        }
        from = screen.indexOf(text, from) + text.length;
      };
      try {
        await waitFor("you> ");
        await type((keys) => child.stdin.write(keys), waitFor);
        child.stdin.write("\x04");
        const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r("still running"), 15_000))]);
        expect(code, `screen: ${JSON.stringify(screen)}`).toBe(0);
        return screen;
      } finally {
        child.kill("SIGKILL");
      }
    };

    const first = await chat("", async (send, waitFor) => {
      send("/stop\r");
      await waitFor("Nothing is running.");
      send("/help\r");
      await waitFor("/new — start a new conversation");
      send("look\r");
      await waitFor("\x1b[36mcode\x1b[39m");
      await waitFor("you> ");
    });
    expect(fake.requests).toHaveLength(2);
    // The text before the tool call and the reply after it are paragraphs of their own, the reply rendered.
    expect(first).toContain("Let me look.\r\n\r\n");
    expect(first).toContain("\x1b[1m\x1b[4mFound\x1b[24m\x1b[22m");
    expect(first).toContain("It is \x1b[1mbold\x1b[22m and \x1b[36mcode\x1b[39m.");

    // A new chat recalls the last line with the up arrow; --no-markdown prints the reply as written.
    const second = await chat("--no-markdown", async (send, waitFor) => {
      send("\x1b[A\r");
      await waitFor("`code`.");
      await waitFor("you> ");
    });
    expect(fake.requests.map((r) => String(r.body.messages.findLast((m) => m.role === "user")?.content).split("\n").at(-1))).toEqual(["look", "look", "look", "look"]);
    expect(second).toContain("Let me look.\r\n\r\n# Found\r\n\r\nIt is **bold** and `code`.");
    expect(second).not.toContain("\x1b[1mbold");
    expect((await readFile(join(home, "history", "cli_history"), "utf8")).split("\n").filter(Boolean)).toEqual(["/stop", "/help", "look", "look"]);
  });
});
