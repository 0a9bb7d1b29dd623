import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FAULT_POINTS } from "../../src/fault.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { writeGatewayHome } from "../helpers/daemon.js";
import { runCli } from "../helpers/cli.js";
import { getJson, postMessage, startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { sleep, until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";


interface Reply {
  content: string;
  deliveryId: string;
}
interface SessionDetail {
  messages: Array<{ role: string; content: string | null; name?: string }>;
  turns: Array<{ state: string; final: boolean }>;
}

/** The model: a user message gets read_file (read-only) then exec (a side effect); tool results get the answer. */
function worker(latencyMs = 0) {
  return startFakeOpenAi([], (req) => {
    const last = req.body.messages.at(-1);
    if (last?.role === "tool") return { content: "All done.", delayMs: latencyMs };
    const who = /work for (\w+)/.exec(String(last?.content))?.[1] ?? "x";
    return {
      delayMs: latencyMs,
      toolCalls: [
        { name: "read_file", arguments: { path: "notes.txt" } },
        { name: "exec", arguments: { command: `echo ${who} >> runs.txt` } },
      ],
    };
  });
}


const runsOf = async (home: string) =>
  (await readFile(join(home, "workspace/runs.txt"), "utf8").catch(() => "")).split("\n").filter(Boolean);

describe("durable execution across kill -9 (real gateway processes, TROUPE_FAULT)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let gateway: GatewayProcess | undefined;
  closeAfterEach(() => [gateway, fake]);

  async function home() {
    const dir = await tmp();
    await writeGatewayHome(dir, fake!.url);
    await writeFile(join(dir, "workspace/notes.txt"), "remember the milk\n");
    return dir;
  }

  /** What each fault point leaves for the restart to do, and how often exec has run in the end. */
  const cases: Array<{ fault: string; execRuns: number; execResult: RegExp }> = [
    { fault: "after-inbox-write", execRuns: 1, execResult: /Exit code: 0/ },
    { fault: "awaiting-model", execRuns: 1, execResult: /Exit code: 0/ },
    { fault: "after-tool-started:1", execRuns: 1, execResult: /Exit code: 0/ },
    { fault: "after-tool-started:2", execRuns: 0, execResult: /interrupted before it completed .* effect is unknown/ },
    { fault: "after-tool-completed:2", execRuns: 1, execResult: /Exit code: 0/ },
    { fault: "during-delivery", execRuns: 1, execResult: /Exit code: 0/ },
    { fault: "before-outbox-delete", execRuns: 1, execResult: /Exit code: 0/ },
  ];

  it("covers every fault point", () => {
    // The API channel sends a reply in one part; the point between parts is covered in telegram-delivery.test.ts.
    const multiPart = ["after-part-accepted"];
    // Consolidation's and Dream's points are covered in memory.test.ts, the cron run's in cron-kill.test.ts, the Telegram batch's in telegram.test.ts, the hooks' in hooks.test.ts.
    const elsewhere = FAULT_POINTS.filter((p) => p.startsWith("consolidate-") || p.startsWith("dream-") || p.startsWith("finalize-") || p === "after-cron-run-write" || p === "after-updates-fetched");
    expect(new Set(cases.map((c) => c.fault.split(":")[0]))).toEqual(new Set(FAULT_POINTS.filter((p) => !multiPart.includes(p) && !elsewhere.includes(p))));
  });

  it.each(cases)("killed at $fault: after restart the reply is delivered once and nothing is done twice", async ({ fault, execRuns, execResult }) => {
    fake = await worker();
    const dir = await home();
    gateway = await startGateway(dir, { TROUPE_FAULT: fault });
    postMessage(gateway, "api:k", "please work for alice");
    const died = await gateway.exited;
    expect(died.signal).toBe("SIGKILL");

    gateway = await startGateway(dir);
    const g = gateway;
    const replies = await until(
      async () => {
        const r = await getJson<{ replies: Reply[] }>(g, "/api/sessions/api:k/replies");
        return r.replies.length ? r.replies : undefined;
      },
      20_000,
      "the reply",
    );
    await sleep(500);
    const after = await getJson<{ replies: Reply[] }>(g, "/api/sessions/api:k/replies");
    expect(after.replies.map((r) => r.content)).toEqual(["All done."]);
    expect(replies).toHaveLength(1);

    const session = await getJson<SessionDetail>(g, "/api/sessions/api:k");
    expect(session.messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["please work for alice"]);
    expect(session.messages.filter((m) => m.role === "assistant" && m.content === "All done.")).toHaveLength(1);
    expect(session.turns.map((t) => [t.state, t.final])).toEqual([["responded", true]]);
    const readResult = session.messages.find((m) => m.role === "tool" && m.name === "read_file");
    expect(readResult?.content).toBe("1| remember the milk\n\n(End of file — 1 lines total)");
    expect(session.messages.find((m) => m.role === "tool" && m.name === "exec")?.content).toMatch(execResult);
    expect(await runsOf(dir)).toHaveLength(execRuns);
  });

  // Two gateways and four CLI processes: over the default 30 s on a loaded 2-core machine.
  it("troupe sessions list/show report the interrupted turn without a daemon, and the resumed one through it", async () => {
    fake = await worker();
    const dir = await home();
    gateway = await startGateway(dir, { TROUPE_FAULT: "after-tool-started:2" });
    postMessage(gateway, "api:k", "please work for bob");
    await gateway.exited;
    gateway = undefined;

    const list = await runCli(["sessions", "list"], { TROUPE_HOME: dir });
    expect(list.stderr).toBe("");
    expect(list.stdout).toMatch(/^SESSION\s+TURNS\s+TOKENS\s+UPDATED\s+STATUS\napi:k\s+0\s+0\s+\S+ \S+\s+1 interrupted\n$/);
    const before = await runCli(["sessions", "show", "api:k"], { TROUPE_HOME: dir });
    expect(before.stdout).toContain("  user: please work for bob");
    expect(before.stdout).toMatch(/turns:\n {2}\S+ {2}\S+ \S+ {2}awaiting_tools \(interrupted\)\n$/);

    gateway = await startGateway(dir);
    const g = gateway;
    await until(async () => ((await getJson<{ replies: Reply[] }>(g, "/api/sessions/api:k/replies")).replies.length ? true : undefined), 20_000, "the reply");
    const after = await runCli(["sessions", "list"], { TROUPE_HOME: dir });
    expect(after.stdout).toMatch(/\napi:k\s+1\s+\d+\s+\S+ \S+\s+1 resumed\n$/);
    const show = await runCli(["sessions", "show", "api:k"], { TROUPE_HOME: dir });
    expect(show.stdout).toContain("  assistant → read_file({\"path\":\"notes.txt\"}), exec({\"command\":\"echo bob >> runs.txt\"})");
    expect(show.stdout).toMatch(/ {2}tool exec: Error: this call was interrupted before it completed/);
    expect(show.stdout).toContain("  assistant: All done.");
    expect(show.stdout).toMatch(/responded \(resumed 1×\)\n$/);
    expect((await runCli(["sessions", "show", "api:nope"], { TROUPE_HOME: dir })).stderr).toBe("no session api:nope; troupe sessions list shows them\n");
  }, 90_000);

  it("20 sessions killed mid-turn at a random instant all complete after restart, each answered once", async () => {
    fake = await worker(150);
    const dir = await home();
    gateway = await startGateway(dir);
    const names = Array.from({ length: 20 }, (_, i) => `u${i}`);
    for (const n of names) postMessage(gateway, `api:${n}`, `please work for ${n}`);
    await sleep(200 + Math.floor(Math.random() * 700));
    gateway.proc.kill("SIGKILL");
    await gateway.exited;

    gateway = await startGateway(dir);
    const g = gateway;
    await until(async () => (g.output().includes("recovering interrupted work") ? true : undefined), 5_000, "the recovery to start");
    await until(
      async () => {
        const counts = await Promise.all(names.map(async (n) => (await getJson<{ replies: Reply[] }>(g, `/api/sessions/api:${n}/replies`)).replies.length));
        return counts.every((c) => c >= 1) ? counts : undefined;
      },
      30_000,
      "all 20 replies",
    );
    await sleep(500);
    for (const n of names) {
      const { replies } = await getJson<{ replies: Reply[] }>(g, `/api/sessions/api:${n}/replies`);
      expect(replies.map((r) => r.content), n).toEqual(["All done."]);
      const session = await getJson<SessionDetail>(g, `/api/sessions/api:${n}`);
      expect(session.messages.filter((m) => m.role === "user"), n).toHaveLength(1);
    }
    // exec ran at most once per session: never repeated after the kill.
    const runs = await runsOf(dir);
    for (const n of names) expect(runs.filter((r) => r === n).length, n).toBeLessThanOrEqual(1);
  });
});
