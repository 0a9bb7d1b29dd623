import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isAlive } from "../../src/cli/pidfile.js";
import { readSse } from "../../src/server/sse.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { runCli } from "../helpers/cli.js";
import { writeHome } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { closeAfterEach, detachedDaemon } from "../helpers/teardown.js";

interface Pidfile {
  pid: number;
  url: string;
}

/** /restart in a chat: the real detached daemon shuts down cleanly and starts again as a new process. */
describe("/restart (real daemon)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let home: string | undefined;
  closeAfterEach(() => [detachedDaemon(home), fake]);

  const pidfile = async (dir: string) => JSON.parse(await readFile(join(dir, "daemon.pid"), "utf8")) as Pidfile;
  /** POSTs a message and resolves once it is accepted (the reply is read later from the chat's mailbox). */
  async function post(d: Pidfile, auth: Record<string, string>, key: string, content: string): Promise<void> {
    const res = await fetch(`${d.url}/api/sessions/${key}/messages`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ content }) });
    expect(res.status).toBe(200);
    const events = readSse(res.body!)[Symbol.asyncIterator]();
    for (let m = await events.next(); !m.done; m = await events.next()) if (m.value.event === "accepted") break;
    // The stream ends when the daemon goes away; nobody waits for it.
    void (async () => {
      for (let m = await events.next().catch(() => ({ done: true }) as const); !m.done; m = await events.next().catch(() => ({ done: true }) as const));
    })();
  }
  const replies = async (d: Pidfile, auth: Record<string, string>, key: string) => {
    const res = await fetch(`${d.url}/api/sessions/${key}/replies`, { headers: auth }).catch(() => undefined);
    return res?.ok ? ((await res.json()) as { replies: Array<{ content: string }> }).replies.map((r) => r.content) : [];
  };

  it("restarts with the same data dir: daemon.pid names the new process, the interrupted turn resumes, the chat hears it is back, status and stop work", async () => {
    let slow = true;
    fake = await startFakeOpenAi([], () => {
      if (slow) {
        slow = false;
        return { content: "too late", delayMs: 60_000 };
      }
      return { content: "Answered after the restart." };
    });
    home = await tmp();
    await writeHome(home, fake.url, { config: { gateway: { port: 0 } } });
    const start = await runCli(["daemon", "start"], { TROUPE_HOME: home });
    expect(start.code, start.stderr).toBe(0);
    const first = await pidfile(home);
    const auth = { authorization: `Bearer ${(await readFile(join(home, "gateway.token"), "utf8")).trim()}` };

    await post(first, auth, "api:work", "think hard");
    await until(() => fake!.requests.length >= 1, 30_000, "the slow model call");
    await post(first, auth, "api:ops", "/restart");

    // The old process exits; the new one records itself and answers /health with its own pid.
    await until(() => !isAlive(first.pid), 60_000, "the old gateway to exit").catch(async (err: unknown) => {
      // What the gateway said, to see why it did not restart.
      const out = await readFile(join(home!, "logs", "daemon.out"), "utf8").catch(() => "");
      const log = (await readdir(join(home!, "logs"))).find((f) => f.endsWith(".log"));
      const lines = log ? (await readFile(join(home!, "logs", log), "utf8")).split("\n").slice(-30).join("\n") : "";
      throw new Error(`${String(err)}\n${out}\n${lines}`);
    });
    const second = await until(async () => {
      const p = await pidfile(home!).catch(() => undefined);
      if (!p || p.pid === first.pid) return undefined;
      const health = await fetch(`${p.url}/health`).then((r) => r.json() as Promise<{ pid: number }>).catch(() => undefined);
      return health?.pid === p.pid ? p : undefined;
    }, 60_000, "the new gateway to answer");
    expect(isAlive(second.pid)).toBe(true);

    // The turn cut short by the restart resumed from its checkpoint and was answered once.
    const work = await until(async () => {
      const r = await replies(second, auth, "api:work");
      return r.length ? r : undefined;
    }, 60_000, "the resumed turn's reply");
    expect(work).toEqual(["Answered after the restart."]);
    const ops = await until(async () => {
      const r = await replies(second, auth, "api:ops");
      return r.length >= 2 ? r : undefined;
    }, 30_000, "the restart notices");
    expect(ops[0]).toMatch(/^Restarting…/);
    expect(ops[1]).toMatch(/^Restart completed in \d+\.\ds\.$/);

    const status = await runCli(["daemon", "status"], { TROUPE_HOME: home });
    expect(status.code, status.stdout + status.stderr).toBe(0);
    expect(status.stdout).toContain(`troupe daemon running (pid ${second.pid})`);
    const stop = await runCli(["daemon", "stop"], { TROUPE_HOME: home });
    expect(stop.stdout).toBe(`troupe daemon stopped (pid ${second.pid})\n`);
    expect(isAlive(second.pid)).toBe(false);
    home = undefined;
  }, 240_000);
});
