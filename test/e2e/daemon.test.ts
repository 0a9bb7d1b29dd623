import { spawn } from "node:child_process";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isAlive } from "../../src/cli/pidfile.js";
import { readSse } from "../../src/server/sse.js";
import { openStore } from "../../src/store/store.js";
import { listTurns } from "../../src/store/turns.js";
import { runCli, TROUPE_BIN } from "../helpers/cli.js";
import { writeHome } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { sleep } from "../helpers/wait.js";
import { closeAfterEach, detachedDaemon } from "../helpers/teardown.js";


describe("troupe daemon (real processes over loopback)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let home: string | undefined;
  closeAfterEach(() => [detachedDaemon(home), fake]);

  async function started(script: Parameters<typeof startFakeOpenAi>[0] = [], handler?: Parameters<typeof startFakeOpenAi>[1]) {
    fake = await startFakeOpenAi(script, handler);
    home = await tmp();
    await writeHome(home, fake.url, { config: { gateway: { port: 0 } } });
    const start = await runCli(["daemon", "start"], { TROUPE_HOME: home });
    expect(start.stderr).toBe("");
    expect(start.code).toBe(0);
    const pidfile = JSON.parse(await readFile(join(home, "daemon.pid"), "utf8")) as { pid: number; url: string };
    expect(start.stdout).toBe(`troupe daemon started (pid ${pidfile.pid}) on ${pidfile.url}; logs: troupe daemon logs -f\n`);
    const token = (await readFile(join(home, "gateway.token"), "utf8")).trim();
    return { home, ...pidfile, token, auth: { authorization: `Bearer ${token}` } };
  }

  it("starts detached, answers the control API with its token only, and stops gracefully", async () => {
    const d = await started([{ content: "Hello from the daemon." }]);
    expect((await stat(join(d.home, "gateway.token"))).mode & 0o777).toBe(0o600);

    expect(await (await fetch(`${d.url}/health`)).json()).toMatchObject({ ok: true, pid: d.pid });
    expect((await fetch(`${d.url}/api/actors`)).status).toBe(401);
    expect((await fetch(`${d.url}/api/actors`, { headers: { authorization: "Bearer wrong" } })).status).toBe(401);
    const actors = (await (await fetch(`${d.url}/api/actors`, { headers: d.auth })).json()) as { root: { id: string; kind: string; children: Array<{ id: string; state: string }> } };
    expect(actors.root).toMatchObject({ id: "supervisor", kind: "supervisor", machine: "supervisor", state: "running" });
    expect(actors.root.children.map((c) => c.id)).toContain("channel:api");

    const bad = await fetch(`${d.url}/api/sessions/api:x/messages`, { method: "POST", headers: { ...d.auth, "content-type": "application/json" }, body: JSON.stringify({ text: "hi" }) });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/content: .*expected string|Unrecognized key/);

    // The live actor events, as the inspector reads them.
    expect((await fetch(`${d.url}/api/events`)).status).toBe(401);
    const watch = new AbortController();
    const live = await fetch(`${d.url}/api/events`, { headers: d.auth, signal: watch.signal });
    const actorEvents: Array<{ event: string; data: { actorId?: string; state?: string } }> = [];
    const reading = (async () => {
      for await (const m of readSse(live.body!)) actorEvents.push(m as (typeof actorEvents)[number]);
    })().catch(() => undefined);

    const res = await fetch(`${d.url}/api/sessions/api:x/messages`, { method: "POST", headers: { ...d.auth, "content-type": "application/json" }, body: JSON.stringify({ content: "hi" }) });
    const events: string[] = [];
    let reply: unknown;
    for await (const m of readSse(res.body!)) {
      events.push(m.event);
      if (m.event === "reply") reply = m.data;
    }
    expect(reply).toMatchObject({ content: "Hello from the daemon." });
    expect(events[0]).toBe("accepted");
    expect(events).toContain("turn_state");
    await sleep(200);
    watch.abort();
    await reading;
    expect(actorEvents[0]?.event).toBe("tree");
    expect(actorEvents.some((e) => e.event === "actor_spawned" && e.data.actorId === "session:api:x")).toBe(true);
    const sessionStates = actorEvents.filter((e) => e.event === "actor_state" && e.data.actorId === "session:api:x").map((e) => e.data.state);
    expect(sessionStates).toContain("active.running");
    expect(sessionStates.at(-1)).toBe("idle");

    const session = (await (await fetch(`${d.url}/api/sessions/api:x`, { headers: d.auth })).json()) as { messages: Array<{ role: string; content: string }>; turns: Array<{ state: string }> };
    expect(session.messages.map((m) => `${m.role}:${m.content}`)).toEqual(["user:hi", "assistant:Hello from the daemon."]);
    expect(session.turns.map((t) => t.state)).toEqual(["responded"]);
    expect((await fetch(`${d.url}/api/sessions/nope`, { headers: d.auth })).status).toBe(404);

    const status = await runCli(["daemon", "status"], { TROUPE_HOME: d.home });
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`^troupe daemon running \\(pid ${d.pid}\\) on ${d.url}`));
    expect(status.stdout).toMatch(/\nsupervisor \[supervisor\] running/);
    expect(status.stdout).toMatch(/\n {2}channel:api \[channel\] active/);

    const stop = await runCli(["daemon", "stop"], { TROUPE_HOME: d.home });
    expect(stop.stdout).toBe(`troupe daemon stopped (pid ${d.pid})\n`);
    expect(isAlive(d.pid)).toBe(false);
    await expect(stat(join(d.home, "daemon.pid"))).rejects.toThrow();
    expect((await runCli(["daemon", "status"], { TROUPE_HOME: d.home })).code).toBe(3);
    const logs = await runCli(["daemon", "logs", "-n", "200"], { TROUPE_HOME: d.home });
    expect(logs.stdout).toContain("gateway listening");
    expect(logs.stdout).toContain("shutting down");
  });

  it("troupe agent talks to the running daemon; a second gateway refuses and names the holder", async () => {
    const d = await started([{ content: "via the daemon" }]);
    const agent = await runCli(["agent", "-m", "hello"], { TROUPE_HOME: d.home });
    expect(agent.stderr).toBe("");
    expect(agent.stdout).toBe("via the daemon\n");
    expect(fake?.requests).toHaveLength(1);

    const second = await runCli(["gateway"], { TROUPE_HOME: d.home });
    expect(second.code).toBe(1);
    expect(second.stderr.trim()).toBe(`another troupe process (pid ${d.pid}) holds ${join(d.home, "store")}; stop it first or use another TROUPE_HOME`);
    const again = await runCli(["daemon", "start"], { TROUPE_HOME: d.home });
    expect(again.stdout).toBe(`troupe daemon is already running (pid ${d.pid}) on ${d.url}\n`);
  });

  it("on SIGTERM mid-turn exits 0 promptly, leaving the turn at a durable checkpoint", async () => {
    fake = await startFakeOpenAi([{ content: "never seen", delayMs: 20_000 }]);
    home = await tmp();
    await writeHome(home, fake.url, { config: { gateway: { port: 0 } } });
    const gateway = spawn(process.execPath, [TROUPE_BIN, "gateway"], { env: { ...process.env, TROUPE_HOME: home } });
    let out = "";
    gateway.stdout.on("data", (c: Buffer) => (out += c.toString()));
    while (!out.includes("troupe gateway on")) await sleep(50);
    const url = /on (http:\/\/\S+) /.exec(out)![1]!;
    const token = (await readFile(join(home, "gateway.token"), "utf8")).trim();
    void fetch(`${url}/api/sessions/api:slow/messages`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ content: "take your time" }) }).catch(() => undefined);
    while (fake.inFlight() === 0) await sleep(50);
    const t0 = Date.now();
    gateway.kill("SIGTERM");
    const code = await new Promise<number | null>((r) => gateway.once("exit", r));
    expect(code).toBe(0);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(out).toContain("troupe gateway stopped");
    const store = await openStore(join(home, "store"));
    const turns = await listTurns(store);
    await store.close();
    expect(turns.map((t) => [t.sessionKey, t.state, t.final])).toEqual([["api:slow", "awaiting_model", false]]);
    home = undefined;
  });

  it("install-service --dry-run prints a systemd user unit that restarts troupe always", async () => {
    const dir = await tmp();
    const r = await runCli(["daemon", "install-service", "--dry-run"], { TROUPE_HOME: dir });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Environment=TROUPE_HOME=${dir}`);
    expect(r.stdout).toMatch(/ExecStart=\S+node\S* \S+bin\/troupe\.js gateway --detached/);
    expect(r.stdout).toContain("Restart=always");
    // A unit per data dir: this one is not ~/.troupe, so its name carries the dir's.
    expect(r.stdout).toMatch(/systemctl --user daemon-reload && systemctl --user enable --now troupe-[\w-]+\.service/);
  });
});
