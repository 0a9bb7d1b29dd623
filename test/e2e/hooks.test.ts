import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { runCli } from "../helpers/cli.js";
import { writeHome } from "../helpers/daemon.js";
import { getJson, postMessage, startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";

interface Reply {
  content: string;
}
interface SessionDetail {
  messages: Array<{ role: string; content: string | null }>;
  turns: Array<{ state: string; final: boolean }>;
}

/** A workspace hook that appends a line to hook-runs.txt each time it runs, and signs the reply. */
const SIGN_HOOK = `import { appendFileSync } from "node:fs";
import { join } from "node:path";
export default ({ workspace }) => ({
  name: "sign",
  finalizeContent(ctx, content) {
    appendFileSync(join(workspace, "hook-runs.txt"), JSON.stringify(content) + "\\n");
    return content + "\\n-- signed by hook";
  },
});
`;

/** A configured hook that throws at two points: skipped, the turn goes on. */
const BROKEN_HOOK = `export default {
  beforeIteration() { throw new Error("broken hook"); },
  finalizeContent() { throw new Error("broken hook"); },
};
`;

const ANSWER = "The answer is 42.";
const SIGNED = `${ANSWER}\n-- signed by hook`;

/**
 * A hook module in the workspace and one in agents.defaults.hooks, run by real gateway processes
 * killed (kill -9, TROUPE_FAULT) around the final answer's finalisation: before the hooks ran, after
 * they ran but before their result was journalled, after it was. Each time the hook has run once on
 * the answer, and the reply is delivered once.
 */
describe("hooks across kill -9 (real gateway processes)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let gateway: GatewayProcess | undefined;
  closeAfterEach(() => [gateway, fake]);

  async function home() {
    fake = await startFakeOpenAi([], (req) => ({ content: String(req.body.messages.at(-1)?.content).includes("ping") ? "pong" : ANSWER }));
    const dir = await tmp();
    await writeHome(dir, fake.url, { defaults: { hooks: ["extra/broken.mjs"] }, config: { gateway: { port: 0 } } });
    await mkdir(join(dir, "workspace/hooks"), { recursive: true });
    await mkdir(join(dir, "workspace/extra"), { recursive: true });
    await writeFile(join(dir, "workspace/hooks/sign.mjs"), SIGN_HOOK);
    await writeFile(join(dir, "workspace/extra/broken.mjs"), BROKEN_HOOK);
    return dir;
  }

  const hookRuns = async (dir: string) =>
    (await readFile(join(dir, "workspace/hook-runs.txt"), "utf8").catch(() => ""))
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as string);

  const replies = (g: GatewayProcess) => getJson<{ replies: Reply[] }>(g, "/api/sessions/api:k/replies").then((r) => r.replies.map((x) => x.content));

  it.each([
    // Killed before the hooks ran: the resumed turn runs them (once).
    { fault: "finalize-before-hooks", reply: SIGNED },
    // Killed after the hook ran, before its result was journalled: it is not run on the same answer again; the answer goes out as the model wrote it.
    { fault: "finalize-during-hooks", reply: ANSWER },
    // Killed after the result was journalled, before the final checkpoint: the journalled content is the reply.
    { fault: "finalize-after-hooks", reply: SIGNED },
  ])("killed at $fault: the hook ran once on the answer and the reply is delivered once", async ({ fault, reply }) => {
    const dir = await home();
    gateway = await startGateway(dir, { TROUPE_FAULT: fault });
    void postMessage(gateway, "api:k", "what is the answer?");
    expect((await gateway.exited).signal).toBe("SIGKILL");

    gateway = await startGateway(dir);
    const g = gateway;
    await until(async () => ((await replies(g)).length ? true : undefined), 60_000, "the resumed turn's reply");
    // A second message on the same chat: delivered after anything still queued for the first, so a duplicate would show.
    await postMessage(g, "api:k", "ping");
    await until(async () => ((await replies(g)).length >= 2 ? true : undefined), 60_000, "the reply to ping");

    expect(await replies(g)).toEqual([reply, "pong\n-- signed by hook"]);
    expect(await hookRuns(dir)).toEqual([ANSWER, "pong"]);
    const session = await getJson<SessionDetail>(g, "/api/sessions/api:k");
    expect(session.messages.filter((m) => m.role === "assistant").map((m) => m.content)).toEqual([reply, "pong\n-- signed by hook"]);
    expect(session.turns.map((t) => [t.state, t.final])).toEqual([
      ["responded", true],
      ["responded", true],
    ]);
    // The configured hook threw at both its points each turn; it was skipped and logged, and the turns went on.
    const log = await readFile(join(dir, "logs/troupe.log"), "utf8");
    expect(log).toContain("hook broken.mjs failed in finalizeContent; skipped");
    expect(log).toContain("hook broken.mjs failed in beforeIteration; skipped");
  }, 180_000);

  it("troupe status lists the hook modules in the order they run, and a configured one that is missing", async () => {
    const dir = await home();
    await writeHome(dir, fake!.url, { defaults: { hooks: ["extra/broken.mjs", "~/nowhere/gone.mjs"] } });
    const status = await runCli(["status"], { TROUPE_HOME: dir, HOME: dir });
    expect(status.stdout).toContain(`\nhooks:     extra/broken.mjs, ${join(dir, "nowhere/gone.mjs")} (missing), hooks/sign.mjs\n`);
  });
});
