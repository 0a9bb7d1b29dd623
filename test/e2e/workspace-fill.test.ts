import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { WORKSPACE_TEMPLATES_DIR } from "../../src/context/templates.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { runCli } from "../helpers/cli.js";
import { writeGatewayHome, writeHome } from "../helpers/daemon.js";
import { startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { useTempDirs } from "../helpers/tmp.js";

const TEMPLATES = ["AGENTS.md", "HEARTBEAT.md", "SOUL.md", "USER.md", "memory/MEMORY.md"];
const template = (rel: string) => readFile(join(WORKSPACE_TEMPLATES_DIR, rel), "utf8");

/**
 * nanobot's `agent` and `gateway` commands call sync_workspace_templates first: what the workspace
 * lacks is made from the templates (with an empty memory/history.jsonl and skills/); nothing there is overwritten.
 */
describe("troupe agent and gateway fill what the workspace lacks (real processes)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let gateway: GatewayProcess | undefined;
  closeAfterEach(() => [gateway, fake]);

  it("agent -w DIR: the missing files are made from the templates, the user's AGENTS.md is kept, and the prompt has both", async () => {
    fake = await startFakeOpenAi([{ content: "hello" }]);
    const dir = await tmp();
    await writeHome(dir, fake.url);
    const workspace = join(dir, "elsewhere");
    await mkdir(workspace);
    await writeFile(join(workspace, "AGENTS.md"), "my own agent rules\n");
    const r = await runCli(["-w", workspace, "agent", "-m", "hi"], { TROUPE_HOME: dir });
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("hello\n");
    expect(await readFile(join(workspace, "AGENTS.md"), "utf8")).toBe("my own agent rules\n");
    for (const rel of TEMPLATES.filter((f) => f !== "AGENTS.md")) expect(await readFile(join(workspace, rel), "utf8"), rel).toBe(await template(rel));
    expect(existsSync(join(workspace, "memory/history.jsonl"))).toBe(true);
    expect(existsSync(join(workspace, "skills"))).toBe(true);
    const system = String(fake.requests[0]?.body.messages[0]?.content);
    expect(system).toContain("my own agent rules");
    expect(system).toContain((await template("SOUL.md")).split("\n").find((l) => l.startsWith("I am"))!);
  });

  it("gateway on a fresh workspace: every template is there once it listens; a second start changes nothing", async () => {
    fake = await startFakeOpenAi([]);
    const dir = await tmp();
    await writeGatewayHome(dir, fake.url, { gateway: { heartbeat: { enabled: false } } });
    const workspace = join(dir, "workspace");
    gateway = await startGateway(dir);
    for (const rel of TEMPLATES) expect(await readFile(join(workspace, rel), "utf8"), rel).toBe(await template(rel));
    expect(await readFile(join(workspace, "memory/history.jsonl"), "utf8")).toBe("");
    expect(existsSync(join(workspace, "skills"))).toBe(true);
    gateway.proc.kill("SIGTERM");
    await gateway.exited;
    await writeFile(join(workspace, "SOUL.md"), "mine\n");
    gateway = await startGateway(dir);
    expect(await readFile(join(workspace, "SOUL.md"), "utf8")).toBe("mine\n");
  }, 120_000);
});
